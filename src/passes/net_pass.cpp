#include "passes/net_pass.hpp"

#include <cmath>

namespace dlcaffe {

std::vector<std::string> RunFusionPasses(caffe::NetParameter* net, const BlobSet& keep) {
  std::vector<std::string> applied;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& entry : FusionPassRegistry::Passes()) {
      const int n = entry.pass(net, keep);
      for (int i = 0; i < n; ++i) applied.push_back(entry.name);
      changed = changed || n > 0;
    }
  }
  return applied;
}

std::vector<std::string> RunGraphPasses(caffe::NetParameter* net, bool fuse_patterns) {
  BlobSet keep;
  const BlobUses uses(*net);
  for (const auto& layer : net->layer()) {
    for (const auto& top : layer.top())
      if (layer.bottom_size() == 0 || !uses.readers.count(top)) keep.insert(top);
  }
  std::vector<std::string> applied;
  if (fuse_patterns) applied = RunFusionPasses(net, keep);
  MakeLayersInPlace(net, keep);
  return applied;
}

BlobUses::BlobUses(const caffe::NetParameter& net) {
  for (int i = 0; i < net.layer_size(); ++i) {
    for (const auto& b : net.layer(i).bottom()) readers[b].push_back(i);
    for (const auto& t : net.layer(i).top()) writers[t].push_back(i);
  }
}

int BlobUses::SingleReader(const std::string& blob) const {
  auto it = readers.find(blob);
  return it != readers.end() && it->second.size() == 1 ? it->second[0] : -1;
}

int BlobUses::Producer(const std::string& blob) const {
  auto it = writers.find(blob);
  return it == writers.end() ? -1 : it->second.back();
}

bool IsPower(const caffe::LayerParameter& l, float power, float scale, float shift, float tol) {
  if (l.type() != "Power" || l.bottom_size() != 1) return false;
  const auto& p = l.power_param();
  auto near = [&](float a, float b) { return std::fabs(a - b) <= tol * std::max(1.f, std::fabs(b)); };
  return near(p.power(), power) && near(p.scale(), scale) && near(p.shift(), shift);
}

bool ScalarOperand(const caffe::LayerParameter& l, caffe::BinaryOpParameter::Operation op,
                   float* value) {
  if (l.type() != "BinaryOp" || l.bottom_size() != 1 || l.blobs_size() != 1) return false;
  const auto& p = l.binary_op_param();
  if (p.operation() != op || p.operand_first() || l.blobs(0).data_size() != 1) return false;
  // A learnable operand stays a layer of its own.
  if (l.param_size() > 0 && l.param(0).has_name()) return false;
  *value = l.blobs(0).data(0);
  return true;
}

void RemoveLayers(caffe::NetParameter* net, const std::set<int>& indices) {
  caffe::NetParameter kept;
  for (int i = 0; i < net->layer_size(); ++i)
    if (!indices.count(i)) kept.add_layer()->Swap(net->mutable_layer(i));
  net->mutable_layer()->Swap(kept.mutable_layer());
}

}  // namespace dlcaffe
