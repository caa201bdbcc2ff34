// Small helpers for layer tests: parameters from prototxt text, blobs filled
// with seeded random values.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "dlcaffe/blob.hpp"
#include "dlcaffe/layer.hpp"

namespace dlcaffe {
namespace test {

// Parses a LayerParameter from text, e.g. "type: 'ReLU' relu_param { ... }".
caffe::LayerParameter LayerParam(const std::string& text);
// Creates the layer through the registry.
std::unique_ptr<Layer> MakeLayer(const std::string& text);

// A NetParameter from prototxt text, its state set to `phase` (Caffe's
// default is TRAIN).
caffe::NetParameter NetFromText(const std::string& text, caffe::Phase phase = caffe::TRAIN);

// Fills the blob's data with uniform values in [lo, hi) from a seeded generator.
void FillUniform(Blob* blob, float lo, float hi, unsigned seed);
void FillGaussian(Blob* blob, float mean, float std, unsigned seed);

}  // namespace test
}  // namespace dlcaffe
