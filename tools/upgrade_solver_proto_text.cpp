// upgrade_solver_proto_text: Caffe's tool that rewrites a solver prototxt
// written with the deprecated `solver_type` enum (SGD, NESTEROV, ...) with
// the current `type` string ("SGD", "Nesterov", ...); nets written inside
// the solver (net_param, train_net_param, test_net_param) are upgraded too.
//
//   upgrade_solver_proto_text SOLVER_IN SOLVER_OUT
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <iostream>
#include <string>

#include "caffe.pb.h"
#include "dlcaffe/caffe_legacy_upgrade.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"

int main(int argc, char** argv) {
  FLAGS_logtostderr = 1;
  FLAGS_colorlogtostderr = false;
  gflags::SetUsageMessage(
      "upgrades a solver prototxt from Caffe's deprecated solver_type enum to the type "
      "string.\n"
      "Usage:\n"
      "    upgrade_solver_proto_text SOLVER_IN SOLVER_OUT");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (argc != 3) {
    std::cerr << gflags::ProgramUsage() << std::endl;
    return 1;
  }
  const std::string in = argv[1], out = argv[2];
  try {
    caffe::SolverParameter solver;
    dlcaffe::ReadProtoFromTextFile(in, &solver);
    if (!dlcaffe::UpgradeSolverAsNeeded(in, &solver))
      LOG(WARNING) << "File already in latest proto format: " << in;
    dlcaffe::WriteProtoToTextFile(solver, out);
    LOG(INFO) << "Wrote upgraded SolverParameter text proto to " << out;
  } catch (const std::exception& e) {
    std::cerr << "upgrade_solver_proto_text: error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
