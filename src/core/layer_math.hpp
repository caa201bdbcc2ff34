// The math of a layer's matrix products (GemmArgs::math), from NVIDIA
// Caffe's forward_math / backward_math: what the inputs of its GEMMs may be
// rounded to before they are multiplied, so that a device's matrix engine
// can do the multiplying.
//
// A layer's math in one direction is its own *_math field if set, else its
// storage type (the blobs it reads and writes). The net's
// default_forward_math / default_backward_math reach the layer through the
// storage pass (passes/assign_storage_types.cpp), which copies them into
// every layer that sets none, so the LayerParameter alone decides.
//
// FLOAT is exact float32 (Caffe's arithmetic), FLOAT16 and BFLOAT16 round to
// those types, TF32 (a math type only) rounds float32 inputs to 10-bit
// mantissas. RunOptions::allow_tf32 (DLCAFFE_ALLOW_TF32, reaching the layer
// as LayerChoices::allow_tf32) makes every FLOAT math TF32, as PyTorch's
// allow_tf32. DOUBLE, INT and UINT are refused.
#pragma once
#include "dlcaffe/caffe.pb.h"
#include "dlcaffe/math.hpp"
#include "dlcaffe/layer_choices.hpp"
#include "dlcaffe/storage_type.hpp"

namespace dlcaffe {

// Whether `type` may be a *_math field's value (FLOAT, TF32, FLOAT16,
// BFLOAT16), and the list of those for messages.
bool IsMathType(caffe::Type type);
extern const char kMathTypes[];

// The math of the layer's forward products (its forward_math, else its
// storage type) and of its backward products, data and weight gradients
// (backward_math, else the storage type: a gradient is stored as its
// data). `storage` is the type of the layer's blobs. Throws for a field
// that is not a math type, naming the layer and the field.
MatrixMath ForwardMatrixMath(const caffe::LayerParameter& param, StorageType storage,
                             const LayerChoices& choices);
MatrixMath BackwardMatrixMath(const caffe::LayerParameter& param, StorageType storage,
                              const LayerChoices& choices);

}  // namespace dlcaffe
