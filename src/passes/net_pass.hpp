// Rewrites of a net description (NetParameter -> NetParameter), each in its
// own file and testable alone: the ONNX importer's pattern fusions (a
// subgraph an exporter spelled out op by op becomes one layer) and the
// in-place rewrite. A fusion registers itself with REGISTER_FUSION_PASS.
//
// Every pass keeps the blobs in `keep` (graph inputs and outputs) as they
// are: it neither removes nor renames them, nor overwrites them in place.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/context.hpp"
#include "dlcaffe/onnx_import.hpp"

namespace dlcaffe {

using BlobSet = std::set<std::string>;

// A fusion: rewrites every match in `net` and returns how many it fused.
using FusionPass = std::function<int(caffe::NetParameter* net, const BlobSet& keep)>;

class FusionPassRegistry {
 public:
  static void Add(const std::string& name, FusionPass pass);
  static const std::map<std::string, FusionPass>& Passes();
};

struct FusionPassRegisterer {
  FusionPassRegisterer(const std::string& name, FusionPass pass) {
    FusionPassRegistry::Add(name, std::move(pass));
  }
};
#define REGISTER_FUSION_PASS(name, pass) \
  static ::dlcaffe::FusionPassRegisterer g_fusion_pass_##name(#name, pass)

// Runs every registered fusion until none matches; returns one entry per
// fused subgraph ("GELU", "LayerNorm", ...).
std::vector<std::string> RunFusionPasses(caffe::NetParameter* net, const BlobSet& keep);

// Runs ReLU, BatchNorm, Scale and Dropout layers in place where their input
// has no other reader and its producer does not need its output for its own
// backward: the form Caffe nets are written in, which the Net's fusions
// (ReLU into convolution, BatchNorm/Scale absorption) look for.
int MakeLayersInPlace(caffe::NetParameter* net, const BlobSet& keep);

// The graph passes for a net of any source (RunOptions::graph_passes on):
// the fusions (unless `fuse_patterns` is false), then the in-place rewrite,
// keeping the net's inputs (tops of layers without bottoms) and outputs
// (blobs no layer reads). Returns what RunFusionPasses returns.
std::vector<std::string> RunGraphPasses(caffe::NetParameter* net, bool fuse_patterns);

// A classifier without a loss (an imported model) made trainable: a label
// Input and a SoftmaxWithLoss over the last axis of its output (the first
// top that no layer reads, of `output_shape`): N x classes, or a language
// model's B x T x vocabulary with B x T labels. Errors name `where` (the
// model's file).
void AddClassifierLoss(caffe::NetParameter* net, const std::vector<int>& output_shape,
                       const std::string& where);

// Caffe's rule, run by every Net on its description: Split layers where a
// blob feeds several layers (insert_splits.cpp).
void InsertSplits(const caffe::NetParameter& param, caffe::NetParameter* split_param);

// Mixed precision (NetParameter.default_forward_type, LayerParameter
// .forward_type and the others; assign_storage_types.cpp): gives every layer
// its storage type (forward_type set explicitly), float32 for a layer whose
// kernels have no 16-bit form (Layer::SupportsStorage), and a Convert layer
// wherever a layer reads a blob of another type. A net that asks for no
// 16-bit type comes out unchanged. Errors name the layer and the field.
void AssignStorageTypes(const caffe::NetParameter& param, Context& ctx,
                        caffe::NetParameter* typed);

// Points each imported parameter at the layer blob that now holds it (found
// by the ParamSpec name the importer gave it), after fusions moved blobs.
void RelocateParameters(const caffe::NetParameter& net,
                        std::map<std::string, OnnxParameterSource>* parameters);

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
