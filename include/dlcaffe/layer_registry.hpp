// Layers register themselves by their Caffe type string, one macro in their
// own .cpp: REGISTER_LAYER_CLASS(ReLU) registers ReLULayer as "ReLU".
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dlcaffe/layer.hpp"

namespace dlcaffe {

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
};

struct LayerRegisterer {
  LayerRegisterer(const std::string& type, LayerRegistry::Creator creator) {
    LayerRegistry::Add(type, std::move(creator));
  }
};

}  // namespace dlcaffe

#define REGISTER_LAYER_CLASS(type)                                          \
  static ::dlcaffe::LayerRegisterer g_register_layer_##type(                \
      #type, [](const caffe::LayerParameter& param, ::dlcaffe::Context& ctx) { \
        return std::unique_ptr<::dlcaffe::Layer>(new type##Layer(param, ctx)); \
      })
