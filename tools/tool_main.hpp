// What Caffe's small tools share (convert_imageset, compute_image_mean,
// extract_features, the upgrade tools): glog to stderr, the usage when the
// number of arguments is wrong, one "<tool>: error: ..." line and exit code 1
// for a user mistake (the tool's body throws dlcaffe::Error), and the dataset
// tools' backend check.
#pragma once
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <exception>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

// The usage message, and the tool's flags where it has any.
inline void ShowUsage(const char* argv0, const std::string& tool) {
  const std::string source = "tools/" + tool + ".cpp";
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);
  for (const auto& flag : flags) {
    if (flag.filename.find(source) != std::string::npos) {
      gflags::ShowUsageWithFlagsRestrict(argv0, source.c_str());
      return;
    }
  }
  std::cerr << gflags::ProgramUsage() << std::endl;
}

// Parses the flags, checks that `min_args` to `max_args` positional arguments
// remain (else prints the usage and returns 1), and runs `body` on them.
inline int ToolMain(int argc, char** argv, const std::string& tool, const std::string& usage,
                    size_t min_args, size_t max_args,
                    const std::function<void(const std::vector<std::string>&)>& body) {
  FLAGS_logtostderr = 1;
  FLAGS_colorlogtostderr = false;
  gflags::SetUsageMessage(usage);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < min_args || args.size() > max_args) {
    ShowUsage(argv[0], tool);
    return 1;
  }
  try {
    body(args);
  } catch (const std::exception& e) {  // dlcaffe::Error, and OpenCV's or the allocator's
    std::cerr << tool << ": error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}

// Caffe's tools also take LevelDB; dlcaffe reads and writes LMDB only.
inline void RequireLmdbBackend(const std::string& backend, const std::string& what) {
  DLC_REQUIRE(backend == "lmdb", what << " '" << backend
                                      << "' is not supported; dlcaffe's datasets are lmdb");
}

}  // namespace dlcaffe
