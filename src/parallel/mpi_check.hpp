// MPI calls whose failure becomes a dlcaffe::Error with MPI's own text (the
// communicators return error codes: MPI_ERRORS_RETURN). Only for sources
// built with MPI (DLCAFFE_WITH_MPI).
#pragma once
#include <mpi.h>

#include <string>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

inline std::string MpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length);
}

#define DLC_MPI_CHECK(call)                                                    \
  do {                                                                         \
    const int dlc_mpi_err_ = (call);                                           \
    DLC_REQUIRE(dlc_mpi_err_ == MPI_SUCCESS,                                   \
                #call " failed: " << ::dlcaffe::MpiErrorText(dlc_mpi_err_));   \
  } while (0)

// MPI counts are int: large buffers go in pieces.
constexpr size_t kMpiMaxPiece = size_t(1) << 30;

}  // namespace dlcaffe
