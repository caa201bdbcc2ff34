// Shape (dlcaffe; ONNX Shape and Size of a tensor whose size follows the
// data): the bottom's dimensions from `start` to `end` (negative ones count
// from the end; clamped as ONNX's Shape), or with `size` its element count,
// as floats. They are known on the host when the layer runs, and written
// from there; the bottom's values are not read. No gradient.
#include <algorithm>
#include <vector>

#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class ShapeLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Shape"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    values_.clear();
    const caffe::ShapeParameter& p = param_.shape_param();
    if (p.size()) {
      values_.push_back(static_cast<float>(bottom[0]->count()));
      top[0]->Reshape(std::vector<int>{});
      return;
    }
    const int rank = bottom[0]->num_axes();
    int start = p.start(), end = p.has_end() ? p.end() : rank;
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp(start, 0, rank);
    end = std::clamp(end, start, rank);
    for (int d = start; d < end; ++d) values_.push_back(static_cast<float>(bottom[0]->shape(d)));
    top[0]->Reshape(std::vector<int>{static_cast<int>(values_.size())});
  }

  void Forward(const std::vector<Blob*>&, const std::vector<Blob*>& top) override {
    top[0]->WriteData(values_);
  }

  void Backward(const std::vector<Blob*>&, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients(propagate_down, bottom);
  }

 private:
  std::vector<float> values_;
};

REGISTER_LAYER_CLASS(Shape);

}  // namespace dlcaffe
