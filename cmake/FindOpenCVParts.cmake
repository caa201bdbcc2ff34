# Debian splits OpenCV into per-module -dev packages; only libopencv-dev (which
# pulls in every module) ships OpenCVConfig.cmake. We need core, imgproc and
# imgcodecs only, so find them directly.
find_path(DLCAFFE_OPENCV_INCLUDE opencv2/core.hpp PATH_SUFFIXES opencv4 REQUIRED)
set(DLCAFFE_OPENCV_LIBS)
foreach(part core imgproc imgcodecs)
  find_library(DLCAFFE_OPENCV_${part} NAMES opencv_${part} REQUIRED)
  list(APPEND DLCAFFE_OPENCV_LIBS ${DLCAFFE_OPENCV_${part}})
endforeach()
