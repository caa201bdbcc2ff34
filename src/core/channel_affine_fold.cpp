#include "core/channel_affine_fold.hpp"

#include <string>

#include "dlcaffe/context.hpp"

namespace dlcaffe {

void ComputeChannelAffine(Context& ctx, const Layer& producer, const Layer& batch_norm,
                          const Layer* scale_layer, int channels, Blob* scale, Blob* shift) {
  scale->Reshape({channels});
  shift->Reshape({channels});
  const auto& stats = batch_norm.blobs();
  // Absent operands are flagged off; the kernel never reads them.
  const cl_mem unused = stats[0]->data();
  const bool has_gamma = scale_layer != nullptr;
  const bool has_beta = has_gamma && scale_layer->blobs().size() > 1;
  const bool has_bias = producer.blobs().size() > 1;
  ctx.Launch1D(ctx.Kernel("channel_affine_fold.cl", "", "fold_channel_affine"), channels,
               channels, batch_norm.layer_param().batch_norm_param().eps(), stats[0]->data(),
               stats[1]->data(), stats[2]->data(),
               has_gamma ? scale_layer->blobs()[0]->data() : unused, has_gamma ? 1 : 0,
               has_beta ? scale_layer->blobs()[1]->data() : unused, has_beta ? 1 : 0,
               has_bias ? producer.blobs()[1]->data() : unused, has_bias ? 1 : 0,
               scale->data(), shift->data());
}

}  // namespace dlcaffe
