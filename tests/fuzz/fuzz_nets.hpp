// The small nets the fuzz targets load weights and states into, and that
// make_fuzz_seeds writes the seed .caffemodel and .solverstate files for.
#pragma once
#include <string>
#include <vector>

#include "dlcaffe/io.hpp"

namespace dlcaffe {
namespace fuzz {

// Input 2 x 3 x 7 x 6 -> conv 4 (3x3) -> BatchNorm -> Scale -> ReLU -> pool ->
// InnerProduct 5 -> Softmax: blobs of 1, 2, 3 and 4 axes.
constexpr char kSmallDeployNet[] = R"(name: "small"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 dim: 7 dim: 6 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" }
layer { name: "scale" type: "Scale" bottom: "conv" top: "conv" scale_param { bias_term: true } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "fc" type: "InnerProduct" bottom: "pool" top: "fc"
  inner_product_param { num_output: 5 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "prob" type: "Softmax" bottom: "fc" top: "prob" }
)";

// A net that trains without a dataset: DummyData -> conv -> InnerProduct ->
// SoftmaxWithLoss.
constexpr char kSmallTrainNet[] = R"(name: "small_train"
layer { name: "data" type: "DummyData" top: "data" top: "label"
  dummy_data_param { shape { dim: 2 dim: 2 dim: 5 dim: 5 } shape { dim: 2 }
    data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 3 kernel_size: 3 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "fc" type: "InnerProduct" bottom: "conv" top: "fc"
  inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc" bottom: "label" top: "loss" }
)";

// The solver types that keep history, each with the settings it accepts.
inline const std::vector<std::string>& HistorySolverTypes() {
  static const std::vector<std::string> types = {"SGD", "Nesterov", "AdaGrad", "RMSProp",
                                                 "AdaDelta", "Adam"};
  return types;
}

// A solver of `type` training kSmallTrainNet.
inline caffe::SolverParameter SmallSolver(const std::string& type) {
  caffe::SolverParameter param;
  ReadProtoFromTextString(R"(base_lr: 0.01
lr_policy: "fixed"
max_iter: 1000
display: 0
snapshot_after_train: false
)", "small_solver.prototxt", &param);
  param.set_type(type);
  if (type == "SGD" || type == "Nesterov" || type == "Adam") param.set_momentum(0.9f);
  if (type == "AdaDelta") param.set_momentum(0.95f);
  ReadProtoFromTextString(kSmallTrainNet, "small_train.prototxt", param.mutable_net_param());
  return param;
}

}  // namespace fuzz
}  // namespace dlcaffe
