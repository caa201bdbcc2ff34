# The OpenCV parts the C++ examples read and draw images with
# (DLCAFFE_OPENCV_INCLUDE, DLCAFFE_OPENCV_LIBS): dlcaffe's own build has set
# them; an example built on its own finds them. Debian ships
# OpenCVConfig.cmake only with the full libopencv-dev; with the per-module
# packages, FindOpenCVParts finds the parts.
if(NOT DLCAFFE_OPENCV_LIBS)
  find_package(OpenCV QUIET COMPONENTS core imgproc imgcodecs)
  if(OpenCV_FOUND)
    set(DLCAFFE_OPENCV_INCLUDE ${OpenCV_INCLUDE_DIRS})
    set(DLCAFFE_OPENCV_LIBS ${OpenCV_LIBS})
  else()
    include(${CMAKE_CURRENT_LIST_DIR}/FindOpenCVParts.cmake)
  endif()
endif()
