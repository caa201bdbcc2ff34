// LeNet (models/lenet/lenet.prototxt's deploy net) in Caffe's legacy V1
// format, with seeded random weights written as a V1 .caffemodel (`layers`
// carrying blobs in the legacy 4-D shapes old Caffe wrote) and as a current
// one. Shared by the load-time upgrade test and the upgrade tools' test.
#pragma once
#include <random>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/net.hpp"

namespace dlcaffe {
namespace test {

// What old Caffe's examples/mnist/lenet.prototxt looked like.
inline const char* V1LenetText() {
  return R"(name: "LeNet"
input: "data"
input_dim: 64
input_dim: 1
input_dim: 28
input_dim: 28
layers {
  name: "conv1"
  type: CONVOLUTION
  bottom: "data"
  top: "conv1"
  blobs_lr: 1
  blobs_lr: 2
  convolution_param {
    num_output: 20
    kernel_size: 5
    stride: 1
    weight_filler { type: "xavier" }
    bias_filler { type: "constant" }
  }
}
layers {
  name: "pool1"
  type: POOLING
  bottom: "conv1"
  top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layers {
  name: "conv2"
  type: CONVOLUTION
  bottom: "pool1"
  top: "conv2"
  blobs_lr: 1
  blobs_lr: 2
  convolution_param {
    num_output: 50
    kernel_size: 5
    stride: 1
    weight_filler { type: "xavier" }
    bias_filler { type: "constant" }
  }
}
layers {
  name: "pool2"
  type: POOLING
  bottom: "conv2"
  top: "pool2"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layers {
  name: "ip1"
  type: INNER_PRODUCT
  bottom: "pool2"
  top: "ip1"
  blobs_lr: 1
  blobs_lr: 2
  inner_product_param {
    num_output: 500
    weight_filler { type: "xavier" }
    bias_filler { type: "constant" }
  }
}
layers {
  name: "relu1"
  type: RELU
  bottom: "ip1"
  top: "ip1"
}
layers {
  name: "ip2"
  type: INNER_PRODUCT
  bottom: "ip1"
  top: "ip2"
  blobs_lr: 1
  blobs_lr: 2
  inner_product_param {
    num_output: 10
    weight_filler { type: "xavier" }
    bias_filler { type: "constant" }
  }
}
layers {
  name: "prob"
  type: SOFTMAX
  bottom: "ip2"
  top: "prob"
}
)";
}

// One learnable blob of LeNet: its layer, its legacy 4-D shape (num,
// channels, height, width, as old Caffe stored it) and its current shape.
struct LenetBlob {
  const char* layer;
  std::vector<int> legacy;
  std::vector<int> shape;
};

inline const std::vector<LenetBlob>& LenetBlobs() {
  static const std::vector<LenetBlob> blobs = {
      {"conv1", {20, 1, 5, 5}, {20, 1, 5, 5}}, {"conv1", {1, 1, 1, 20}, {20}},
      {"conv2", {50, 20, 5, 5}, {50, 20, 5, 5}}, {"conv2", {1, 1, 1, 50}, {50}},
      {"ip1", {1, 1, 500, 800}, {500, 800}},      {"ip1", {1, 1, 1, 500}, {500}},
      {"ip2", {1, 1, 10, 500}, {10, 500}},        {"ip2", {1, 1, 1, 10}, {10}},
  };
  return blobs;
}

// Seeded values for every blob of LenetBlobs(), small enough for softmax to
// stay informative.
inline std::vector<std::vector<float>> LenetWeights(unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<float>> weights;
  for (const auto& blob : LenetBlobs()) {
    size_t count = 1;
    for (int d : blob.shape) count *= d;
    std::uniform_real_distribution<float> uniform(-0.1f, 0.1f);
    std::vector<float> values(count);
    for (auto& v : values) v = uniform(rng);
    weights.push_back(std::move(values));
  }
  return weights;
}

// The weights as a V1 .caffemodel: `layers` with V1 enum types and blobs in
// legacy 4-D shapes (and the layers without weights, as Caffe wrote them).
inline caffe::NetParameter V1LenetCaffemodel(const std::vector<std::vector<float>>& weights) {
  caffe::NetParameter net;
  net.set_name("LeNet");
  net.add_input("data");  // old Caffe listed the net's inputs, without dims
  const std::vector<std::pair<const char*, caffe::V1LayerParameter::LayerType>> layers = {
      {"conv1", caffe::V1LayerParameter::CONVOLUTION}, {"pool1", caffe::V1LayerParameter::POOLING},
      {"conv2", caffe::V1LayerParameter::CONVOLUTION}, {"pool2", caffe::V1LayerParameter::POOLING},
      {"ip1", caffe::V1LayerParameter::INNER_PRODUCT}, {"relu1", caffe::V1LayerParameter::RELU},
      {"ip2", caffe::V1LayerParameter::INNER_PRODUCT}, {"prob", caffe::V1LayerParameter::SOFTMAX}};
  for (const auto& [name, type] : layers) {
    caffe::V1LayerParameter* layer = net.add_layers();
    layer->set_name(name);
    layer->set_type(type);
    for (size_t i = 0; i < LenetBlobs().size(); ++i) {
      if (std::string(LenetBlobs()[i].layer) != name) continue;
      caffe::BlobProto* blob = layer->add_blobs();
      const auto& legacy = LenetBlobs()[i].legacy;
      blob->set_num(legacy[0]);
      blob->set_channels(legacy[1]);
      blob->set_height(legacy[2]);
      blob->set_width(legacy[3]);
      for (float v : weights[i]) blob->add_data(v);
    }
  }
  return net;
}

// The same weights in the current format (`layer`, N-d shapes).
inline caffe::NetParameter V2LenetCaffemodel(const std::vector<std::vector<float>>& weights) {
  caffe::NetParameter net;
  net.set_name("LeNet");
  for (size_t i = 0; i < LenetBlobs().size(); ++i) {
    const LenetBlob& spec = LenetBlobs()[i];
    if (net.layer_size() == 0 || net.layer(net.layer_size() - 1).name() != spec.layer) {
      net.add_layer()->set_name(spec.layer);
    }
    caffe::BlobProto* blob = net.mutable_layer(net.layer_size() - 1)->add_blobs();
    for (int d : spec.shape) blob->mutable_shape()->add_dim(d);
    for (float v : weights[i]) blob->add_data(v);
  }
  return net;
}

// Forwards a LeNet on seeded images in [0, 1) and returns "prob".
inline std::vector<float> ForwardLenet(Net& net, unsigned seed) {
  Blob& data = *net.blob_by_name("data");
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  std::vector<float> images(data.count());
  for (auto& v : images) v = uniform(rng);
  data.WriteData(images);
  net.ForwardNoLoss();
  return net.blob_by_name("prob")->ReadData();
}

}  // namespace test
}  // namespace dlcaffe
