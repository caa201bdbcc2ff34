// The --storage flag of the tools that run a whole net in one storage type
// (dlcaffe bench, onnx_test_runner): what a net's default_forward_type and
// default_backward_type say, set from the command line, so that a model
// from ONNX, which has no prototxt to edit, runs in 16 bits too.
#pragma once
#include <string>

#include "dlcaffe/caffe.pb.h"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

// FLOAT, FLOAT16 or BFLOAT16; anything else is the user's mistake.
inline caffe::Type ParseStorageFlag(const std::string& value) {
  caffe::Type type = caffe::FLOAT;
  DLC_REQUIRE(caffe::Type_Parse(value, &type) &&
                  (type == caffe::FLOAT || type == caffe::FLOAT16 || type == caffe::BFLOAT16),
              "--storage " << value << " is not a storage type (FLOAT, FLOAT16 or BFLOAT16)");
  return type;
}

// Every layer of `param` but its Input layers stored in `storage` (the
// Input layers keep the host's float values as given; their first reader
// rounds them). FLOAT leaves the net as it is.
inline void StoreNetIn(caffe::NetParameter* param, caffe::Type storage) {
  if (storage == caffe::FLOAT) return;
  param->set_default_forward_type(storage);
  param->set_default_backward_type(storage);
  for (caffe::LayerParameter& layer : *param->mutable_layer())
    if (layer.type() == "Input") {
      layer.set_forward_type(caffe::FLOAT);
      layer.set_backward_type(caffe::FLOAT);
    }
}

}  // namespace dlcaffe
