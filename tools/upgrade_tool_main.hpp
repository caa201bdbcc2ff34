// What Caffe's three upgrade tools share: `tool IN OUT`, glog to stderr,
// usage on a wrong argument count, and one "<tool>: error: ..." line with
// exit code 1 for bad input (the tool's own step throws dlcaffe::Error).
#pragma once
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <functional>
#include <iostream>
#include <string>

namespace dlcaffe {

inline int UpgradeToolMain(int argc, char** argv, const std::string& tool, const std::string& usage,
                           const std::function<void(const std::string& in, const std::string& out)>& upgrade) {
  FLAGS_logtostderr = 1;
  FLAGS_colorlogtostderr = false;
  gflags::SetUsageMessage(usage);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (argc != 3) {
    std::cerr << gflags::ProgramUsage() << std::endl;
    return 1;
  }
  try {
    upgrade(argv[1], argv[2]);
  } catch (const std::exception& e) {
    std::cerr << tool << ": error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}

}  // namespace dlcaffe
