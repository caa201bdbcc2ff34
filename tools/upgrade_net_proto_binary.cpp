// upgrade_net_proto_binary: Caffe's tool that rewrites binary net weights (a
// .caffemodel) written in a legacy format (V0 or V1 `layers` carrying the
// blobs) in the current `layer` format.
//
//   upgrade_net_proto_binary V0_OR_V1_NET_BINARY_IN NET_BINARY_OUT
#include <glog/logging.h>

#include "caffe.pb.h"
#include "dlcaffe/caffe_legacy_upgrade.hpp"
#include "dlcaffe/io.hpp"
#include "tool_main.hpp"

int main(int argc, char** argv) {
  return dlcaffe::ToolMain(
      argc, argv, "upgrade_net_proto_binary",
      "upgrades binary net weights (.caffemodel) from Caffe's V0 or V1 format to the "
      "current one.\n"
      "Usage:\n"
      "    upgrade_net_proto_binary V0_OR_V1_NET_BINARY_IN NET_BINARY_OUT",
      2, 2, [](const std::vector<std::string>& args) {
        const std::string& in = args[0];
        const std::string& out = args[1];
        caffe::NetParameter net;
        dlcaffe::ReadProtoFromBinaryFile(in, &net);
        if (dlcaffe::NetNeedsUpgrade(net)) {
          dlcaffe::UpgradeNetAsNeeded(in, &net);
        } else {
          LOG(WARNING) << "File already in latest proto format: " << in;
        }
        dlcaffe::WriteProtoToBinaryFile(net, out);
        LOG(INFO) << "Wrote upgraded NetParameter binary proto to " << out;
      });
}
