// Flatten (Caffe "Flatten"): merges axes [axis, end_axis] of the bottom into
// one, e.g. N x C x H x W -> N x (C*H*W) with the defaults axis = 1,
// end_axis = -1. The top is a view of the bottom: Reshape makes it share the
// bottom's data and diff buffers, so neither pass copies anything.
#include "core/view_layer.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class FlattenLayer : public ViewLayer {
 public:
  using ViewLayer::ViewLayer;
  const char* type() const override { return "Flatten"; }

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
