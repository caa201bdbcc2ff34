// Upgrades of older Caffe net formats that a user may still feed us.
#include "dlcaffe/error.hpp"
#include "dlcaffe/net.hpp"

namespace dlcaffe {

void UpgradeNetAsNeeded(const std::string& source, caffe::NetParameter* param) {
  DLC_REQUIRE(param->layers_size() == 0 || param->layer_size() > 0,
              source << ": uses the legacy V1 'layers' format, which dlcaffe does "
                        "not read; upgrade it with Caffe's upgrade_net_proto_text/"
                        "upgrade_net_proto_binary first");
  if (param->input_size() == 0) return;
  // Deprecated net inputs: input + (input_shape | 4 x input_dim) -> Input layer.
  const int n = param->input_size();
  DLC_REQUIRE(param->input_shape_size() == n || param->input_shape_size() == 0,
              source << ": " << n << " input(s) but " << param->input_shape_size()
                     << " input_shape(s)");
  DLC_REQUIRE(param->input_shape_size() > 0 || param->input_dim_size() == 4 * n,
              source << ": each input needs an input_shape or four input_dim values");
  caffe::LayerParameter input;
  input.set_name("input");
  input.set_type("Input");
  for (int i = 0; i < n; ++i) {
    input.add_top(param->input(i));
    caffe::BlobShape* shape = input.mutable_input_param()->add_shape();
    if (param->input_shape_size() > 0) {
      shape->CopyFrom(param->input_shape(i));
    } else {
      for (int d = 0; d < 4; ++d) shape->add_dim(param->input_dim(4 * i + d));
    }
  }
  caffe::NetParameter upgraded(*param);
  upgraded.clear_input();
  upgraded.clear_input_shape();
  upgraded.clear_input_dim();
  upgraded.clear_layer();
  upgraded.add_layer()->CopyFrom(input);
  for (const auto& layer : param->layer()) upgraded.add_layer()->CopyFrom(layer);
  param->Swap(&upgraded);
}

}  // namespace dlcaffe
