// MakeLayersInPlace: see net_pass.hpp.
// Which layers may run in place, and after which producers, is what their
// types declare (LayerTraits, in each layer's own file).
#include "dlcaffe/layer_registry.hpp"
#include "passes/net_pass.hpp"

namespace dlcaffe {

int MakeLayersInPlace(caffe::NetParameter* net, const BlobSet& keep) {
  int rewritten = 0;
  for (int i = 0; i < net->layer_size(); ++i) {
    caffe::LayerParameter* layer = net->mutable_layer(i);
    if (!LayerRegistry::Traits(layer->type()).runs_in_place || layer->bottom_size() != 1 ||
        layer->top_size() != 1)
      continue;
    const std::string bottom = layer->bottom(0), top = layer->top(0);
    if (bottom == top || keep.count(bottom) || keep.count(top)) continue;
    const BlobUses uses(*net);
    // The bottom's value as this layer reads it: written last by `producer`
    // before it, read by nothing else after that.
    int producer = -1;
    for (int w : uses.writers.count(bottom) ? uses.writers.at(bottom) : std::vector<int>{})
      if (w < i) producer = w;
    if (producer < 0 || uses.writers.at(top).size() != 1) continue;
    int readers_after = 0;
    for (int r : uses.readers.at(bottom))
      if (r > producer) ++readers_after;
    if (readers_after != 1) continue;
    if (!LayerRegistry::Traits(net->layer(producer).type()).backward_reads_no_top) continue;
    // The top is renamed to the bottom everywhere after this layer.
    layer->set_top(0, bottom);
    for (int j = i + 1; j < net->layer_size(); ++j) {
      caffe::LayerParameter* later = net->mutable_layer(j);
      for (int b = 0; b < later->bottom_size(); ++b)
        if (later->bottom(b) == top) later->set_bottom(b, bottom);
      for (int t = 0; t < later->top_size(); ++t)
        if (later->top(t) == top) later->set_top(t, bottom);
    }
    ++rewritten;
  }
  return rewritten;
}

}  // namespace dlcaffe
