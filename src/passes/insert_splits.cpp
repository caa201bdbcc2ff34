// Caffe's split insertion: a top consumed by several bottoms (a use as a loss
// counts as a consumer) is routed through a Split layer, whose backward sums
// the gradients coming back from every consumer.
#include <map>
#include <sstream>

#include "dlcaffe/error.hpp"
#include "dlcaffe/net.hpp"
#include "passes/net_pass.hpp"

namespace dlcaffe {

namespace {

std::string SplitLayerName(const std::string& layer, const std::string& blob, int index) {
  std::ostringstream s;
  s << blob << "_" << layer << "_" << index << "_split";
  return s.str();
}

std::string SplitBlobName(const std::string& layer, const std::string& blob, int index,
                          int split) {
  std::ostringstream s;
  s << blob << "_" << layer << "_" << index << "_split_" << split;
  return s.str();
}

}  // namespace

void InsertSplits(const caffe::NetParameter& param, caffe::NetParameter* split_param) {
  split_param->CopyFrom(param);
  split_param->clear_layer();
  using TopIndex = std::pair<int, int>;  // (layer, top)
  std::map<std::string, TopIndex> last_top;
  std::map<TopIndex, TopIndex> bottom_source;  // (layer, bottom) -> producing top
  std::map<TopIndex, int> consumers;
  std::map<TopIndex, float> loss_weight;
  for (int i = 0; i < param.layer_size(); ++i) {
    const caffe::LayerParameter& layer = param.layer(i);
    for (int j = 0; j < layer.bottom_size(); ++j) {
      auto it = last_top.find(layer.bottom(j));
      DLC_REQUIRE(it != last_top.end(), "layer '" << layer.name() << "' (" << layer.type()
                                                   << "): unknown bottom blob '"
                                                   << layer.bottom(j)
                                                   << "' (no earlier layer produces it)");
      bottom_source[{i, j}] = it->second;
      ++consumers[it->second];
    }
    for (int j = 0; j < layer.top_size(); ++j) last_top[layer.top(j)] = {i, j};
    for (int j = 0; j < layer.loss_weight_size(); ++j) {
      if (layer.loss_weight(j) != 0.f) {
        loss_weight[{i, j}] = layer.loss_weight(j);
        ++consumers[{i, j}];
      }
    }
  }
  std::map<TopIndex, int> next_split;
  for (int i = 0; i < param.layer_size(); ++i) {
    caffe::LayerParameter* layer = split_param->add_layer();
    layer->CopyFrom(param.layer(i));
    for (int j = 0; j < layer->bottom_size(); ++j) {
      const TopIndex source = bottom_source[{i, j}];
      if (consumers[source] > 1) {
        layer->set_bottom(j, SplitBlobName(param.layer(source.first).name(), layer->bottom(j),
                                           source.second, next_split[source]++));
      }
    }
    for (int j = 0; j < layer->top_size(); ++j) {
      const TopIndex top{i, j};
      const int count = consumers.count(top) ? consumers[top] : 0;
      if (count <= 1) continue;
      const std::string& blob = layer->top(j);
      caffe::LayerParameter* split = split_param->add_layer();
      split->set_name(SplitLayerName(layer->name(), blob, j));
      split->set_type("Split");
      split->add_bottom(blob);
      const float weight = loss_weight.count(top) ? loss_weight[top] : 0.f;
      for (int k = 0; k < count; ++k) {
        split->add_top(SplitBlobName(layer->name(), blob, j, k));
        // The loss use of the top takes the split's first output.
        if (weight != 0.f) split->add_loss_weight(k == 0 ? weight : 0.f);
      }
      if (weight != 0.f) {
        layer->clear_loss_weight();
        ++next_split[top];
      }
    }
  }
}

}  // namespace dlcaffe
