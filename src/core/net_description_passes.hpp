// The rewrites every Net runs on its description before it sets up its
// layers (Net::Init), declared here for the Net and implemented with the
// other passes (passes/net_pass.hpp): the core sees what it calls, not the
// passes' internals. Internal to the library.
#pragma once
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/context.hpp"

namespace dlcaffe {

// The graph passes for a net of any source (RunOptions::graph_passes on):
// the fusions (unless `fuse_patterns` is false), then the in-place rewrite,
// keeping the net's inputs (tops of layers without bottoms) and outputs
// (blobs no layer reads). Returns what RunFusionPasses returns.
std::vector<std::string> RunGraphPasses(caffe::NetParameter* net, bool fuse_patterns);

// Caffe's rule, run by every Net on its description: Split layers where a
// blob feeds several layers (passes/insert_splits.cpp).
void InsertSplits(const caffe::NetParameter& param, caffe::NetParameter* split_param);

// Mixed precision (NetParameter.default_forward_type, LayerParameter
// .forward_type and the others; passes/assign_storage_types.cpp): gives every layer
// its storage type (forward_type set explicitly), float32 for a layer whose
// kernels have no 16-bit form (Layer::SupportsStorage), and a Convert layer
// wherever a layer reads a blob of another type. A net that asks for no
// 16-bit type comes out unchanged. Errors name the layer and the field.
void AssignStorageTypes(const caffe::NetParameter& param, Context& ctx,
                        caffe::NetParameter* typed);

}  // namespace dlcaffe
