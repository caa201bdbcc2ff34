#include "dlcaffe/layer_registry.hpp"

#include <glog/logging.h>

#include <map>
#include <sstream>

namespace dlcaffe {

static std::map<std::string, LayerRegistry::Creator>& Registry() {
  static std::map<std::string, LayerRegistry::Creator> registry;
  return registry;
}

void LayerRegistry::Add(const std::string& type, Creator creator) {
  auto& registry = Registry();
  CHECK(registry.count(type) == 0) << "layer type " << type << " registered twice";
  registry[type] = std::move(creator);
}

static std::map<std::string, LayerTraits>& TraitsByType() {
  static std::map<std::string, LayerTraits> traits;
  return traits;
}

void LayerRegistry::SetTraits(const std::string& type, const LayerTraits& traits) {
  CHECK(TraitsByType().emplace(type, traits).second) << "layer type " << type
                                                     << " declared its traits twice";
}

LayerTraits LayerRegistry::Traits(const std::string& type) {
  auto it = TraitsByType().find(type);
  return it == TraitsByType().end() ? LayerTraits() : it->second;
}

static std::map<std::string, LayerRegistry::Creator>& PythonStandIns() {
  static std::map<std::string, LayerRegistry::Creator> stand_ins;
  return stand_ins;
}

void LayerRegistry::AddPythonStandIn(const std::string& module_and_layer, Creator creator) {
  auto& stand_ins = PythonStandIns();
  CHECK(stand_ins.count(module_and_layer) == 0)
      << "Python layer " << module_and_layer << " given two stand-ins";
  stand_ins[module_and_layer] = std::move(creator);
}

std::unique_ptr<Layer> LayerRegistry::Create(const caffe::LayerParameter& param,
                                             Context& ctx) {
  auto& registry = Registry();
  auto it = registry.find(param.type());
  if (it == registry.end() && param.type() == "Python") {
    const auto stand_in = PythonStandIns().find(param.python_param().module() + "." +
                                                param.python_param().layer());
    if (stand_in != PythonStandIns().end()) {
      LOG(INFO) << "layer '" << param.name() << "': Python layer " << stand_in->first
                << " runs as dlcaffe's native equivalent";
      return stand_in->second(param, ctx);
    }
  }
  // Caffe layer types that dlcaffe does not provide (yet): say so plainly
  // rather than calling them unknown.
  // Python layers register when the Python package is imported: a net that
  // has one runs from Python.
  DLC_REQUIRE(it != registry.end() || param.type() != "Python",
              "layer '" << param.name() << "': Python layers run when the net is built from "
                           "Python (import caffe; caffe.Net or caffe.get_solver, docs/python.md), "
                           "not by the dlcaffe tools");
  static const char* const kNotSupportedYet[] = {"WindowData"};
  for (const char* type : kNotSupportedYet)
    DLC_REQUIRE(it != registry.end() || param.type() != type,
                "layer '" << param.name() << "': Caffe's " << type
                          << " layer is not supported yet by dlcaffe");
  if (it == registry.end()) {
    std::ostringstream known;
    for (const auto& type : Types()) known << " " << type;
    DLC_FAIL("layer '" << param.name() << "' has unknown type '" << param.type()
                       << "'. Known types:" << known.str());
  }
  return it->second(param, ctx);
}

std::vector<std::string> LayerRegistry::Types() {
  std::vector<std::string> types;
  for (const auto& entry : Registry()) types.push_back(entry.first);
  return types;
}

bool LayerRegistry::Has(const std::string& type) { return Registry().count(type) > 0; }

}  // namespace dlcaffe
