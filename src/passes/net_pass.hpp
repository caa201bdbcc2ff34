// Rewrites of a net description (NetParameter -> NetParameter), each in its
// own file and testable alone: the ONNX importer's pattern fusions (a
// subgraph an exporter spelled out op by op becomes one layer) and the
// in-place rewrite. A fusion registers itself with REGISTER_FUSION_PASS
// (core/pass_registry.hpp, the registry the plan's folds use too). The
// in-place rewrite reads what layer types declare (LayerTraits); the
// fusions match the op patterns exporters write.
//
// Every pass keeps the blobs in `keep` (graph inputs and outputs) as they
// are: it neither removes nor renames them, nor overwrites them in place.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../core/net_description_passes.hpp"
#include "../core/pass_registry.hpp"
#include "caffe.pb.h"
#include "dlcaffe/context.hpp"

namespace dlcaffe {

using BlobSet = std::set<std::string>;

// A fusion: rewrites every match in `net` and returns how many it fused.
using FusionPass = std::function<int(caffe::NetParameter* net, const BlobSet& keep)>;
using FusionPassRegistry = PassRegistry<FusionPass>;
// Fusions take no rank: they run in order of name, again until none matches.
#define REGISTER_FUSION_PASS(name, pass) \
  static ::dlcaffe::PassRegisterer<::dlcaffe::FusionPass> g_fusion_pass_##name(#name, 0, pass)

// Runs every registered fusion until none matches; returns one entry per
// fused subgraph ("GELU", "LayerNorm", ...).
std::vector<std::string> RunFusionPasses(caffe::NetParameter* net, const BlobSet& keep);

// Runs the layers whose types may run in place (LayerTraits::runs_in_place:
// ReLU, BatchNorm, Scale, Dropout) in place where their input has no other
// reader and its producer's backward reads no top
// (LayerTraits::backward_reads_no_top): the form Caffe nets are written in,
// which the Net's fusions (a clamp into a convolution, BatchNorm/Scale
// absorption) look for.
int MakeLayersInPlace(caffe::NetParameter* net, const BlobSet& keep);

// A classifier without a loss (an imported model) made trainable: a label
// Input and a SoftmaxWithLoss over the last axis of its output (the first
// top that no layer reads, of `output_shape`): N x classes, or a language
// model's B x T x vocabulary with B x T labels. Errors name `where` (the
// model's file).
void AddClassifierLoss(caffe::NetParameter* net, const std::vector<int>& output_shape,
                       const std::string& where);

// ---- what passes share ----

// Who reads and who writes each blob, by layer index.
struct BlobUses {
  explicit BlobUses(const caffe::NetParameter& net);
  std::map<std::string, std::vector<int>> readers, writers;
  int SingleReader(const std::string& blob) const;  // -1 unless exactly one
  int Producer(const std::string& blob) const;      // the last writer, -1 if none
};

// The scalar a one-bottom layer applies, where it is a fixed scalar
// operation: Power (power/scale/shift) or a BinaryOp with a fixed scalar
// operand.
bool IsPower(const caffe::LayerParameter& l, float power, float scale, float shift, float tol = 1e-6f);
// A one-bottom BinaryOp with a scalar operand (not operand_first): its value.
bool ScalarOperand(const caffe::LayerParameter& l, caffe::BinaryOpParameter::Operation op,
                   float* value);
// Removes the layers at these indices.
void RemoveLayers(caffe::NetParameter* net, const std::set<int>& indices);

}  // namespace dlcaffe
