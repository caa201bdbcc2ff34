// Layers register themselves by their Caffe type string, one macro in their
// own .cpp: REGISTER_LAYER_CLASS(ReLU) registers ReLULayer as "ReLU". What
// the passes over a net description may know of a type without making a
// layer of it (LayerTraits) is declared there too: REGISTER_LAYER_TRAITS.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dlcaffe/layer.hpp"

namespace dlcaffe {

// What a layer type allows a rewrite of a net description
// (passes/net_pass.hpp) to do around it; all false for a type that
// declares none.
struct LayerTraits {
  // It may run with its top the same blob as its bottom (one of each).
  bool runs_in_place = false;
  // Its backward reads its bottoms (and what it saved), never its top: a
  // layer after it may overwrite that top in place.
  bool backward_reads_no_top = false;

  LayerTraits& RunsInPlace() {
    runs_in_place = true;
    return *this;
  }
  LayerTraits& BackwardReadsNoTop() {
    backward_reads_no_top = true;
    return *this;
  }
};

class LayerRegistry {
 public:
  using Creator = std::function<std::unique_ptr<Layer>(
      const caffe::LayerParameter&, Context&)>;
  static void Add(const std::string& type, Creator creator);
  // Throws dlcaffe::Error listing the known types for an unknown one.
  static std::unique_ptr<Layer> Create(const caffe::LayerParameter& param,
                                       Context& ctx);
  static std::vector<std::string> Types();
  static bool Has(const std::string& type);
  // A native layer standing in for a known Python layer (python_param's
  // "module.layer", e.g. py-faster-rcnn's "rpn.proposal_layer.ProposalLayer")
  // where Python layers are not registered (the dlcaffe tools and the C++
  // API); under pycaffe the Python layer itself runs.
  static void AddPythonStandIn(const std::string& module_and_layer, Creator creator);
  static void SetTraits(const std::string& type, const LayerTraits& traits);
  // The traits `type` declared (none for a type that declared none).
  static LayerTraits Traits(const std::string& type);
};

struct LayerRegisterer {
  LayerRegisterer(const std::string& type, LayerRegistry::Creator creator) {
    LayerRegistry::Add(type, std::move(creator));
  }
};

struct LayerTraitsRegisterer {
  LayerTraitsRegisterer(const std::string& type, const LayerTraits& traits) {
    LayerRegistry::SetTraits(type, traits);
  }
};

}  // namespace dlcaffe

// REGISTER_LAYER_TRAITS(ReLU, LayerTraits().RunsInPlace().BackwardReadsNoTop())
#define REGISTER_LAYER_TRAITS(type, traits) \
  static ::dlcaffe::LayerTraitsRegisterer g_register_layer_traits_##type(#type, ::dlcaffe::traits)

#define REGISTER_LAYER_CLASS(type)                                          \
  static ::dlcaffe::LayerRegisterer g_register_layer_##type(                \
      #type, [](const caffe::LayerParameter& param, ::dlcaffe::Context& ctx) { \
        return std::unique_ptr<::dlcaffe::Layer>(new type##Layer(param, ctx)); \
      })
