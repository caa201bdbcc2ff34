// Caffe's DataTransformer (TransformationParameter: scale, mirror, crop_size,
// mean_file, mean_value, force_color, force_gray), split in two halves:
//   - on the host, Draw() picks each image's crop window and mirror flag from
//     a generator the caller owns (random crop in TRAIN, the centre crop in
//     TEST; as in Caffe, `mirror: true` flips at random in both phases);
//   - on the device, Transform() enqueues one kernel that writes the float top
//     blob, (pixel - mean) * scale, cropped and mirrored, from an uploaded
//     HostImageBatch.
#pragma once
#include <string>
#include <vector>

#include "dlcaffe/caffe.pb.h"
#include "dlcaffe/blob.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/data/datum.hpp"
#include "dlcaffe/data/image_batch.hpp"

namespace dlcaffe {

class DataTransformer {
 public:
  // Reads the mean file if there is one. `where` prefixes every error
  // ("layer 'mnist' (Data): "). Throws for contradictory parameters.
  DataTransformer(const caffe::TransformationParameter& param, caffe::Phase phase,
                  Context& ctx, const std::string& where = "");

  // Checks that images of this shape can be transformed (crop fits, mean
  // values or mean image match the channels and size); throws otherwise.
  void CheckInput(int channels, int height, int width) const;
  // The top shape for `num` images of channels × height × width.
  std::vector<int> OutputShape(int num, int channels, int height, int width) const;
  // How encoded images are decoded (force_color / force_gray).
  DatumColor color() const;

  // The crop window and mirror flag of one image of height × width. Uses
  // `rng` only for what is random (mirror, TRAIN crop); const, so a prefetch
  // thread may call it while the device works.
  ImageCrop Draw(int height, int width, Rng& rng) const;

  // Enqueues the transform of `batch`, already uploaded to `device_batch`
  // (HostImageBatch::bytes() bytes), into `top`, reshaped to OutputShape.
  void Transform(const HostImageBatch& batch, cl_mem device_batch, Blob* top);

  const caffe::TransformationParameter& param() const { return param_; }
  caffe::Phase phase() const { return phase_; }

 private:
  int MeanMode() const;

  caffe::TransformationParameter param_;
  caffe::Phase phase_;
  Context* ctx_;
  std::string where_;
  Blob mean_image_;                 // from mean_file: C × H × W (uncropped)
  int mean_channels_ = 0, mean_height_ = 0, mean_width_ = 0;
  Blob mean_values_;                // one value per channel, uploaded at first use
  int mean_values_channels_ = 0;
};

}  // namespace dlcaffe
