// Inference BatchNorm (global statistics) and the Scale after it, folded into
// the convolution before them: the pair is one per-channel affine
// y = scale[c] * x + shift[c], which the convolution applies in its GEMM's
// epilogue with its own bias folded into the shift. The plan decides where
// (passes/plan_fold_channel_affine.cpp, on the layers' EpilogueRole); this
// file knows the layers' parameters and
// computes the affine on the device before each folded forward (so it
// follows weights that change, e.g. a test net sharing a training net's).
// Internal to the library.
#pragma once
#include "dlcaffe/blob.hpp"
#include "dlcaffe/layer.hpp"

namespace dlcaffe {

// scale[c] = gamma[c] / sqrt(var[c] + eps) and
// shift[c] = scale[c] * (bias[c] - mean[c]) + beta[c], from the producer's
// bias (0 without one), the BatchNorm's statistics and the Scale's gamma and
// beta (1 and 0 when `scale_layer` is null or has no bias). Reshapes the two
// blobs to the channel count.
void ComputeChannelAffine(Context& ctx, const Layer& producer, const Layer& batch_norm,
                          const Layer* scale_layer, int channels, Blob* scale, Blob* shift);

}  // namespace dlcaffe
