// Caffe's legacy formats upgraded to the current ones, as BVLC Caffe's
// upgrade_proto does it (implementation: src/import/caffe_legacy_upgrade.cpp).
//
// Nets: V0 (`layers { layer { type: "conv" ... } }`, with padding layers
// merged into the next convolution/pooling) -> V1 (`layers { type:
// CONVOLUTION ... }`) -> V2 (`layer { type: "Convolution" ... }`); the old
// data-transformation fields of data layers -> transform_param; the
// deprecated net `input`/`input_shape`/`input_dim` -> an Input layer; old
// BatchNorm param specs -> lr_mult/decay_mult 0.
// Solvers: the `solver_type` enum -> the `type` string.
//
// `source` names the file (or net) in log lines and errors. What cannot be
// upgraded is a dlcaffe::Error that names the source and the layer.
#pragma once
#include <string>

#include "dlcaffe/caffe.pb.h"

namespace dlcaffe {

// Applies every upgrade `param` needs, logging Caffe's "Attempting to
// upgrade ..." / "Successfully upgraded ..." lines. Returns whether
// anything was upgraded.
bool UpgradeNetAsNeeded(const std::string& source, caffe::NetParameter* param);

bool NetNeedsUpgrade(const caffe::NetParameter& param);
bool NetNeedsV0ToV1Upgrade(const caffe::NetParameter& param);
bool NetNeedsV1ToV2Upgrade(const caffe::NetParameter& param);
bool NetNeedsDataUpgrade(const caffe::NetParameter& param);
bool NetNeedsInputUpgrade(const caffe::NetParameter& param);
bool NetNeedsBatchNormUpgrade(const caffe::NetParameter& param);

// The single steps (UpgradeNetAsNeeded runs them in this order).
// V0 layers (and padding layers) -> V1 layers.
void UpgradeV0Net(const std::string& source, caffe::NetParameter* param);
// Legacy scale/mean_file/crop_size/mirror of Data, ImageData and WindowData
// layers (V1 and V2) -> transform_param.
void UpgradeNetDataTransformation(caffe::NetParameter* param);
// V1 `layers` -> V2 `layer`. Blobs are moved, not copied.
void UpgradeV1Net(const std::string& source, caffe::NetParameter* param);
void UpgradeNetInput(const std::string& source, caffe::NetParameter* param);
void UpgradeNetBatchNorm(caffe::NetParameter* param);

// One V1 layer -> one V2 layer (`v1` is consumed: its blobs move).
void UpgradeV1LayerParameter(const std::string& source, caffe::V1LayerParameter* v1,
                             caffe::LayerParameter* layer);
// V1's enum -> V2's type string ("" for NONE).
std::string UpgradeV1LayerType(caffe::V1LayerParameter::LayerType type);
// V0's type string ("conv", "innerproduct", ...) -> V1's enum; false when
// V0 had no such type.
bool UpgradeV0LayerType(const std::string& v0_type, caffe::V1LayerParameter::LayerType* type);

// Solvers: returns whether anything was upgraded.
bool SolverNeedsTypeUpgrade(const caffe::SolverParameter& param);
bool UpgradeSolverAsNeeded(const std::string& source, caffe::SolverParameter* param);
// The `solver_type` enum's `type` string ("SGD", "Nesterov", ...).
std::string SolverTypeName(caffe::SolverParameter::SolverType type);

}  // namespace dlcaffe
