// A MatMul by a stored matrix followed by the addition of a stored vector
// (how exporters write torch.nn.Linear on inputs of rank > 2): an
// InnerProduct without bias and a Bias over its output axis become one
// InnerProduct with its bias (which it adds in one kernel after the GEMM).
#include "passes/net_pass.hpp"

namespace dlcaffe {

namespace {

int FuseInnerProductBias(caffe::NetParameter* net, const BlobSet& keep) {
  int fused = 0;
  for (int i = 0; i < net->layer_size(); ++i) {
    const caffe::LayerParameter& ip = net->layer(i);
    if (ip.type() != "InnerProduct" || ip.inner_product_param().bias_term() || ip.top_size() != 1 ||
        ip.blobs_size() != 1 || keep.count(ip.top(0)))
      continue;
    const BlobUses uses(*net);
    const int b = uses.SingleReader(ip.top(0));
    if (b < 0) continue;
    const caffe::LayerParameter& bias = net->layer(b);
    if (bias.type() != "Bias" || bias.bottom_size() != 1 || bias.blobs_size() != 1 ||
        bias.bias_param().axis() != ip.inner_product_param().axis() ||
        bias.bias_param().num_axes() != 1 ||
        bias.blobs(0).data_size() != static_cast<int>(ip.inner_product_param().num_output()))
      continue;
    caffe::LayerParameter merged = ip;
    merged.mutable_inner_product_param()->set_bias_term(true);
    *merged.add_blobs() = bias.blobs(0);
    while (merged.param_size() < 1) merged.add_param();
    *merged.add_param() = bias.param_size() ? bias.param(0) : caffe::ParamSpec();
    merged.set_top(0, bias.top(0));
    net->mutable_layer(i)->Swap(&merged);
    RemoveLayers(net, {b});
    ++fused;
  }
  return fused;
}

}  // namespace

REGISTER_FUSION_PASS(InnerProductBias, FuseInnerProductBias);

}  // namespace dlcaffe
