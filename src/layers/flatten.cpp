// Flatten (Caffe "Flatten"): merges axes [axis, end_axis] of the bottom into
// one, e.g. N x C x H x W -> N x (C*H*W) with the defaults axis = 1,
// end_axis = -1. The top is a view of the bottom: Reshape makes it share the
// bottom's data and diff buffers, so neither pass copies anything.
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

class FlattenLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Flatten"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(top[0] != bottom[0], Where() << "Flatten cannot work in place");
    const caffe::FlattenParameter& p = param_.flatten_param();
    const Blob& in = *bottom[0];
    const int start = CanonicalAxis(p.axis(), in, "axis");
    const int end = CanonicalAxis(p.end_axis(), in, "end_axis");
    DLC_REQUIRE(start <= end, Where() << "axis " << p.axis() << " comes after end_axis "
                                      << p.end_axis() << " for a bottom of shape "
                                      << in.shape_string());
    std::vector<int> shape(in.shape().begin(), in.shape().begin() + start);
    shape.push_back(in.count(start, end + 1));
    shape.insert(shape.end(), in.shape().begin() + end + 1, in.shape().end());
    top[0]->Reshape(shape);
    top[0]->ShareData(in);
    top[0]->ShareDiff(in);
  }

  // Both copies below are no-ops while the top shares the bottom's buffers (as
  // Reshape arranges); they keep the layer correct if a caller has given the
  // top storage of its own since.
  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    CopyFloats(*ctx_, bottom[0]->count(), bottom[0]->data(), 0, top[0]->data(), 0);
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    CopyFloats(*ctx_, bottom[0]->count(), top[0]->diff(), 0, bottom[0]->diff(), 0);
  }

 private:
  int CanonicalAxis(int axis, const Blob& blob, const char* what) const {
    const int n = blob.num_axes();
    DLC_REQUIRE(axis >= -n && axis < n, Where() << what << " " << axis
                                                << " is out of range for a bottom of shape "
                                                << blob.shape_string());
    return axis < 0 ? axis + n : axis;
  }
};

REGISTER_LAYER_CLASS(Flatten);

}  // namespace dlcaffe
