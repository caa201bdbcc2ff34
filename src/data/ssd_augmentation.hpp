// Caffe SSD's augmentation of annotated images, as its DataTransformer,
// im_transforms and bbox_util do it: photometric distortion, zoom-out
// expansion, random crops that satisfy the batch samplers' constraints, and
// the boxes carried through each (projected into the new window, kept by the
// emit constraint, mirrored). Host code with OpenCV, for AnnotatedData's
// prefetch thread (the pixels' mean, scale and mirror are data_transform.cl's).
#pragma once
#include <opencv2/core.hpp>

#include <vector>

#include "dlcaffe/caffe.pb.h"
#include "dlcaffe/context.hpp"

namespace dlcaffe {
namespace ssd {

// Normalized to the image: [0, 1] inside it.
struct Box {
  float xmin = 0, ymin = 0, xmax = 0, ymax = 0;
};

struct LabeledBox {
  Box box;
  int label = 0, instance = 0;
  bool difficult = false;
};

// Caffe SSD's BBoxSize (0 for an empty box), JaccardOverlap and
// BBoxCoverage (the part of `a` that `b` covers).
float Size(const Box& b);
float Jaccard(const Box& a, const Box& b);
float Coverage(const Box& a, const Box& b);

// The boxes as seen in `window` (a box of the image, possibly beyond it, as
// an expansion's): those meeting the emit constraint and not empty once
// clipped to the window, in its coordinates, mirrored left-right with
// `mirror`.
std::vector<LabeledBox> SeenThrough(const std::vector<LabeledBox>& boxes, const Box& window,
                                    const caffe::EmitConstraint& emit, bool mirror);

// GenerateBatchSamples: for each batch sampler, up to max_sample random
// windows (of max_trials) satisfying its constraint against `objects`.
std::vector<Box> SampleWindows(const std::vector<Box>& objects,
                               const google::protobuf::RepeatedPtrField<caffe::BatchSampler>& samplers,
                               Rng& rng);

// The image inside `window` (clipped to the image, its corners truncated to
// pixels as Caffe SSD's CropImage); *cropped is the pixels' window, which
// the boxes are projected into (Caffe SSD projects them into `window`, up to
// a pixel off).
cv::Mat Crop(const cv::Mat& image, const Box& window, Box* cropped);

// Zoom out (ExpandImage): with probability expand.prob(), the image at a
// random place of a canvas up to max_expand_ratio times its size, filled with
// `fill` (one value per channel, or none: 0); *window is the canvas in the
// image's normalized coordinates. Returns the image unchanged (and the unit
// window) otherwise.
cv::Mat Expand(const cv::Mat& image, const caffe::ExpansionParameter& expand,
               const std::vector<float>& fill, Rng& rng, Box* window);

// ApplyDistort: random brightness, contrast, saturation and hue, in one of
// two orders, then a random channel order (8-bit BGR images).
cv::Mat Distort(const cv::Mat& image, const caffe::DistortionParameter& distort, Rng& rng);

}  // namespace ssd
}  // namespace dlcaffe
