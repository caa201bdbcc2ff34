// DLC_MPI_CHECK: an MPI call's error code as a dlcaffe::Error naming the call
// (communicators are set to MPI_ERRORS_RETURN, so calls return codes).
#pragma once
#include <mpi.h>

#include <cstddef>
#include <string>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

inline std::string MpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length);
}

// MPI counts are int: large buffers go in pieces.
constexpr size_t kMpiMaxPiece = size_t(1) << 30;

}  // namespace dlcaffe

#define DLC_MPI_CHECK(call)                                                    \
  do {                                                                         \
    const int dlc_mpi_err_ = (call);                                           \
    DLC_REQUIRE(dlc_mpi_err_ == MPI_SUCCESS,                                   \
                #call " failed: " << ::dlcaffe::MpiErrorText(dlc_mpi_err_));   \
  } while (0)
