// dlcaffe logs through glog, with Caffe's log lines. An application that does
// not use glog itself calls InitLogging once, first thing, to send those lines
// to stderr and choose the lowest level shown (without it glog prints every
// line with a warning that logging was not initialised).
#pragma once

namespace dlcaffe {

enum class LogLevel { kInfo = 0, kWarning = 1, kError = 2 };

// Safe to call more than once; later calls only change the level.
void InitLogging(const char* program_name, LogLevel min_level = LogLevel::kInfo);

}  // namespace dlcaffe
