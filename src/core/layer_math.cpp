#include "core/layer_math.hpp"

#include "dlcaffe/error.hpp"

namespace dlcaffe {

const char kMathTypes[] = "FLOAT, TF32, FLOAT16 or BFLOAT16";

bool IsMathType(caffe::Type type) {
  return type == caffe::FLOAT || type == caffe::TF32 || type == caffe::FLOAT16 ||
         type == caffe::BFLOAT16;
}

namespace {

MatrixMath Resolve(const caffe::LayerParameter& param, const char* field, bool has,
                   caffe::Type asked, StorageType storage, const LayerChoices& choices) {
  MatrixMath math = MatrixMath::kFloat32;
  if (!has) {
    math = storage == StorageType::kFloat16    ? MatrixMath::kFloat16
           : storage == StorageType::kBFloat16 ? MatrixMath::kBFloat16
                                               : MatrixMath::kFloat32;
  } else {
    DLC_REQUIRE(IsMathType(asked), "layer '" << param.name() << "' (" << param.type() << "): "
                                             << field << " " << caffe::Type_Name(asked)
                                             << " is not supported (" << kMathTypes << ")");
    math = asked == caffe::TF32      ? MatrixMath::kTF32
           : asked == caffe::FLOAT16 ? MatrixMath::kFloat16
           : asked == caffe::BFLOAT16 ? MatrixMath::kBFloat16
                                      : MatrixMath::kFloat32;
  }
  // As PyTorch's allow_tf32: every float32 product, asked for or not.
  if (math == MatrixMath::kFloat32 && choices.allow_tf32) math = MatrixMath::kTF32;
  return math;
}

}  // namespace

MatrixMath ForwardMatrixMath(const caffe::LayerParameter& param, StorageType storage,
                             const LayerChoices& choices) {
  return Resolve(param, "forward_math", param.has_forward_math(), param.forward_math(), storage,
                 choices);
}

MatrixMath BackwardMatrixMath(const caffe::LayerParameter& param, StorageType storage,
                              const LayerChoices& choices) {
  return Resolve(param, "backward_math", param.has_backward_math(), param.backward_math(),
                 storage, choices);
}

}  // namespace dlcaffe
