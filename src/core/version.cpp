// The library's version, compiled in from the header of its own build.
#include "dlcaffe/version.hpp"

namespace dlcaffe {

const char* Version() { return DLCAFFE_VERSION_STRING; }

}  // namespace dlcaffe
