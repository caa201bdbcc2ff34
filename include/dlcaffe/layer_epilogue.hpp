// What a layer's own kernels do in place of layers after it that the
// execution plan folded into it (core/execution_plan.hpp): set by the Net on
// the layer before each pass, read by its Forward and Backward. A layer
// declares which parts it can apply (Layer::EpilogueSupport) and what it can
// be in another's epilogue (Layer::RoleInEpilogue); the plan's fusion passes
// fold only where both agree.
#pragma once

namespace dlcaffe {

class Blob;
class Layer;

// What a layer can be inside the epilogue of the layer before it, in place
// on that layer's top (Layer::RoleInEpilogue): the plan's fusion passes
// match these, not layer types.
enum class EpilogueRole {
  kNone,
  kClamp,                   // max(x, 0): a ReLU of negative_slope 0
  kStoredStatisticsAffine,  // a per-channel affine of stored statistics: an
                            // inference BatchNorm (mean, variance, factor)
  kChannelScale,            // gamma[c] * x [+ beta[c]] of its own parameters:
                            // a Scale over the channel axis
};

struct LayerEpilogue {
  enum Part : unsigned {
    kRelu = 1,            // relu
    kReluDiffMask = 2,    // relu_diff_mask
    kChannelAffine = 4,   // channel_scale, channel_shift
    kScale = 8,           // scale
  };

  // Forward: clamp the single top at 0 as it is written (an in-place ReLU
  // with negative_slope 0 after the layer, whose forward is skipped; its
  // backward still runs unless relu_diff_mask).
  bool relu = false;
  // Backward, for a layer that works in place and clamped its top: read the
  // top diff as that ReLU's backward leaves it (dy where the top is > 0,
  // else 0 * dy); the ReLU's backward is then skipped.
  bool relu_diff_mask = false;
  // Forward: top[n][c] = channel_scale[c] * t + channel_shift[c] instead of
  // t + bias[c] (an inference BatchNorm and Scale folded into a convolution;
  // the shift includes the layer's bias). Null: the layer's own output.
  const Blob* channel_scale = nullptr;
  const Blob* channel_shift = nullptr;
  // Forward and backward: the in-place Scale after the layer, whose
  // gamma * t + beta the layer writes and whose parameter gradients it
  // accumulates (a BatchNorm in training); its own passes are skipped.
  const Layer* scale = nullptr;
};

}  // namespace dlcaffe
