# `cmake --install build --prefix P` installs the library, the public headers
# (with the generated caffe.pb.h and version.hpp beside them), the tools, a
# CMake package (find_package(dlcaffe) -> dlcaffe::dlcaffe) and a pkg-config
# file. Both package descriptions are relocatable: they find the prefix from
# their own location, so the prefix may be chosen at install time.
include(CMakePackageConfigHelpers)

set(DLCAFFE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/dlcaffe)

install(TARGETS dlcaffe_lib EXPORT dlcaffeTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/dlcaffe
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
install(FILES ${DLCAFFE_PROTO_DIR}/caffe.pb.h
              ${CMAKE_CURRENT_BINARY_DIR}/include/dlcaffe/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dlcaffe)
install(TARGETS ${DLCAFFE_TOOL_TARGETS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The schema and the Python tools (draw_net.py reads the schema).
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/proto/caffe.proto
        DESTINATION ${CMAKE_INSTALL_DATADIR}/dlcaffe/proto)
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/tools/extra/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/dlcaffe/tools/extra
        USE_SOURCE_PERMISSIONS FILES_MATCHING PATTERN "*.py")

install(EXPORT dlcaffeTargets NAMESPACE dlcaffe:: DESTINATION ${DLCAFFE_CMAKE_DIR})
configure_package_config_file(cmake/dlcaffeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/dlcaffeConfig.cmake INSTALL_DESTINATION ${DLCAFFE_CMAKE_DIR})
# 0.x: minor versions may change the API.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/dlcaffeConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dlcaffeConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/dlcaffeConfigVersion.cmake
        DESTINATION ${DLCAFFE_CMAKE_DIR})

# pkg-config: the prefix is found from the .pc file's own folder.
file(RELATIVE_PATH DLCAFFE_PC_TO_PREFIX
     /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/dlcaffe.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dlcaffe.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dlcaffe.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
