// upgrade_net_proto_text: Caffe's tool that rewrites a net prototxt written
// in a legacy format (V0 `layers { layer { ... } }`, V1 `layers { type:
// CONVOLUTION ... }`, old data-transformation fields, `input`/`input_dim`)
// in the current `layer { type: "Convolution" ... }` format.
//
//   upgrade_net_proto_text V0_OR_V1_NET_TEXT_IN NET_TEXT_OUT
#include <glog/logging.h>

#include "caffe.pb.h"
#include "dlcaffe/caffe_legacy_upgrade.hpp"
#include "dlcaffe/io.hpp"
#include "tool_main.hpp"

int main(int argc, char** argv) {
  return dlcaffe::ToolMain(
      argc, argv, "upgrade_net_proto_text",
      "upgrades a net prototxt from Caffe's V0 or V1 format to the current one.\n"
      "Usage:\n"
      "    upgrade_net_proto_text V0_OR_V1_NET_TEXT_IN NET_TEXT_OUT",
      2, 2, [](const std::vector<std::string>& args) {
        const std::string& in = args[0];
        const std::string& out = args[1];
        caffe::NetParameter net;
        dlcaffe::ReadProtoFromTextFile(in, &net);
        if (dlcaffe::NetNeedsUpgrade(net)) {
          dlcaffe::UpgradeNetAsNeeded(in, &net);
        } else {
          LOG(WARNING) << "File already in latest proto format: " << in;
        }
        dlcaffe::WriteProtoToTextFile(net, out);
        LOG(INFO) << "Wrote upgraded NetParameter text proto to " << out;
      });
}
