// upgrade_solver_proto_text: Caffe's tool that rewrites a solver prototxt
// written with the deprecated `solver_type` enum (SGD, NESTEROV, ...) with
// the current `type` string ("SGD", "Nesterov", ...); nets written inside
// the solver (net_param, train_net_param, test_net_param) are upgraded too.
//
//   upgrade_solver_proto_text SOLVER_IN SOLVER_OUT
#include <glog/logging.h>

#include "caffe.pb.h"
#include "dlcaffe/caffe_legacy_upgrade.hpp"
#include "dlcaffe/io.hpp"
#include "tool_main.hpp"

int main(int argc, char** argv) {
  return dlcaffe::ToolMain(
      argc, argv, "upgrade_solver_proto_text",
      "upgrades a solver prototxt from Caffe's deprecated solver_type enum to the type "
      "string.\n"
      "Usage:\n"
      "    upgrade_solver_proto_text SOLVER_IN SOLVER_OUT",
      2, 2, [](const std::vector<std::string>& args) {
        const std::string& in = args[0];
        const std::string& out = args[1];
        caffe::SolverParameter solver;
        dlcaffe::ReadProtoFromTextFile(in, &solver);
        if (!dlcaffe::UpgradeSolverAsNeeded(in, &solver))
          LOG(WARNING) << "File already in latest proto format: " << in;
        dlcaffe::WriteProtoToTextFile(solver, out);
        LOG(INFO) << "Wrote upgraded SolverParameter text proto to " << out;
      });
}
