#include "util/layer_test_util.hpp"

#include <random>

#include "dlcaffe/io.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

caffe::LayerParameter LayerParam(const std::string& text) {
  caffe::LayerParameter param;
  ReadProtoFromTextString(text, "<test layer>", &param);
  if (!param.has_name()) param.set_name("test_layer");
  return param;
}

std::unique_ptr<Layer> MakeLayer(const std::string& text) {
  return LayerRegistry::Create(LayerParam(text), TestContext());
}

caffe::NetParameter NetFromText(const std::string& text, caffe::Phase phase) {
  caffe::NetParameter param;
  ReadProtoFromTextString(text, "<test net>", &param);
  param.mutable_state()->set_phase(phase);
  return param;
}

void FillUniform(Blob* blob, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(blob->count());
  for (float& x : v) x = dist(rng);
  blob->WriteData(v);
}

void FillGaussian(Blob* blob, float mean, float std, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(mean, std);
  std::vector<float> v(blob->count());
  for (float& x : v) x = dist(rng);
  blob->WriteData(v);
}

}  // namespace test
}  // namespace dlcaffe
