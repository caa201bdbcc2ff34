// upgrade_net_proto_binary: Caffe's tool that rewrites binary net weights (a
// .caffemodel) written in a legacy format (V0 or V1 `layers` carrying the
// blobs) in the current `layer` format.
//
//   upgrade_net_proto_binary V0_OR_V1_NET_BINARY_IN NET_BINARY_OUT
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
      "upgrades binary net weights (.caffemodel) from Caffe's V0 or V1 format to the "
      "current one.\n"
      "Usage:\n"
      "    upgrade_net_proto_binary V0_OR_V1_NET_BINARY_IN NET_BINARY_OUT");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (argc != 3) {
    std::cerr << gflags::ProgramUsage() << std::endl;
    return 1;
  }
  const std::string in = argv[1], out = argv[2];
  try {
    caffe::NetParameter net;
    dlcaffe::ReadProtoFromBinaryFile(in, &net);
    if (dlcaffe::NetNeedsUpgrade(net)) {
      dlcaffe::UpgradeNetAsNeeded(in, &net);
    } else {
      LOG(WARNING) << "File already in latest proto format: " << in;
    }
    dlcaffe::WriteProtoToBinaryFile(net, out);
    LOG(INFO) << "Wrote upgraded NetParameter binary proto to " << out;
  } catch (const std::exception& e) {
    std::cerr << "upgrade_net_proto_binary: error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
