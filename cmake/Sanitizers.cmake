# Instrumented builds, each in a build folder of its own:
#   -DDLCAFFE_SANITIZE=address,undefined   scripts/sanitize.sh: the test suite
#                                          under AddressSanitizer + UBSan
#   -DDLCAFFE_FUZZ=ON (Clang)              scripts/fuzz.sh: the libFuzzer targets
#                                          in tests/fuzz, with coverage feedback
# Applied to every target defined after this file is included.
set(DLCAFFE_SANITIZE "" CACHE STRING "Sanitizers for every target, e.g. address,undefined")
option(DLCAFFE_FUZZ "Build tests/fuzz as libFuzzer targets (needs Clang)" OFF)

if(DLCAFFE_SANITIZE)
  # Reports stay recoverable so that tests/sanitizers/ubsan.supp can name the
  # few that are not ours; the scripts set halt_on_error, so any other report
  # fails the test or fuzz run that caused it.
  add_compile_options(-fsanitize=${DLCAFFE_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${DLCAFFE_SANITIZE})
endif()

if(DLCAFFE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "DLCAFFE_FUZZ needs Clang (libFuzzer): CXX=clang++ cmake ...")
  endif()
  # Coverage feedback from all of dlcaffe; the fuzz targets link libFuzzer.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
