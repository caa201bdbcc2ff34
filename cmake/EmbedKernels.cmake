# Embeds every src/cl/*.cl file into one generated C++ source that maps the file
# name to its text. New .cl files are picked up at the next configure/build.
function(dlcaffe_embed_kernels cl_dir out_cpp)
  file(GLOB cl_files CONFIGURE_DEPENDS ${cl_dir}/*.cl ${cl_dir}/*.ptx)
  add_custom_command(
    OUTPUT ${out_cpp}
    COMMAND ${CMAKE_COMMAND} -DCL_DIR=${cl_dir} -DOUT=${out_cpp}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_kernels_script.cmake
    DEPENDS ${cl_files} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_kernels_script.cmake
    COMMENT "Embedding OpenCL kernels")
endfunction()
