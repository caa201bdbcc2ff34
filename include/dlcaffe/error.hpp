// User-facing errors: a bad prototxt, an unknown layer, shapes that do not fit,
// a missing file, a kernel that does not build. They are thrown as
// dlcaffe::Error and turned into one message and a non-zero exit by the tools.
// Internal invariants use glog CHECK instead.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace dlcaffe {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dlcaffe

// DLC_REQUIRE(cond, "layer " << name << " needs ...") throws dlcaffe::Error.
#define DLC_REQUIRE(cond, message)                           \
  do {                                                       \
    if (!(cond)) {                                           \
      std::ostringstream dlc_require_stream_;                \
      dlc_require_stream_ << message;                        \
      throw ::dlcaffe::Error(dlc_require_stream_.str());     \
    }                                                        \
  } while (0)

#define DLC_FAIL(message) DLC_REQUIRE(false, message)
