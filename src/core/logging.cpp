#include "dlcaffe/logging.hpp"

#include <glog/logging.h>

namespace dlcaffe {

void InitLogging(const char* program_name, LogLevel min_level) {
  if (!google::IsGoogleLoggingInitialized()) google::InitGoogleLogging(program_name);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = static_cast<int>(min_level);
}

}  // namespace dlcaffe
