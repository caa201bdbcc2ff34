// Reshape (Caffe "Reshape"): gives the bottom a new shape without touching its
// values. reshape_param.shape replaces the axes [axis, axis + num_axes) of the
// bottom (all of them by default); in it, 0 copies the bottom's dimension at
// that position and a single -1 is inferred from the element count. The top is
// a view: Reshape makes it share the bottom's data and diff buffers.
#include <algorithm>
#include <climits>
#include <string>

#include "core/view_layer.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class ReshapeLayer : public ViewLayer {
 public:
  using ViewLayer::ViewLayer;
  const char* type() const override { return "Reshape"; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ReshapeParameter& p = param_.reshape_param();
    DLC_REQUIRE(p.num_axes() >= -1,
                Where() << "num_axes must be >= 0, or -1 for all, got " << p.num_axes());
    copy_axes_.clear();
    inferred_axis_ = -1;
    constant_count_ = 1;
    for (int i = 0; i < p.shape().dim_size(); ++i) {
      const int64_t dim = p.shape().dim(i);
      if (dim == 0) {
        copy_axes_.push_back(i);
      } else if (dim == -1) {
        DLC_REQUIRE(inferred_axis_ == -1,
                    Where() << "the new shape " << ShapeText() << " contains more than one -1 "
                            << "(at most one dimension can be inferred)");
        inferred_axis_ = i;
      } else {
        DLC_REQUIRE(dim > 0 && dim <= INT_MAX, Where() << "dimension " << dim
                                                       << " of the new shape " << ShapeText()
                                                       << " is invalid");
        constant_count_ *= dim;
        DLC_REQUIRE(constant_count_ <= INT_MAX, Where() << "the new shape " << ShapeText()
                                                        << " has more than INT_MAX elements");
      }
    }
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(top[0] != bottom[0], Where() << "Reshape cannot work in place");
    const caffe::ReshapeParameter& p = param_.reshape_param();
    const Blob& in = *bottom[0];
    const int in_axes = in.num_axes();
    // axis counts from the end for negative values; -1 means "after the last".
    const int start = p.axis() >= 0 ? p.axis() : in_axes + p.axis() + 1;
    DLC_REQUIRE(start >= 0 && start <= in_axes, Where() << "axis " << p.axis()
                                                        << " is out of range for a bottom of shape "
                                                        << in.shape_string());
    const int end = p.num_axes() == -1 ? in_axes : start + p.num_axes();
    DLC_REQUIRE(end <= in_axes, Where() << "axis " << p.axis() << " + num_axes " << p.num_axes()
                                        << " is out of range for a bottom of shape "
                                        << in.shape_string());
    std::vector<int> shape(in.shape().begin(), in.shape().begin() + start);
    for (int i = 0; i < p.shape().dim_size(); ++i)
      shape.push_back(static_cast<int>(p.shape().dim(i)));
    shape.insert(shape.end(), in.shape().begin() + end, in.shape().end());
    for (int i : copy_axes_) {
      DLC_REQUIRE(start + i < in_axes,
                  Where() << "the new shape " << ShapeText() << " has a 0 at position " << i
                          << " but the bottom of shape " << in.shape_string()
                          << " has no axis there to copy");
      shape[start + i] = in.shape(start + i);
    }
    if (inferred_axis_ >= 0) {
      // Saturated at INT_MAX + 1 (never a divisor of a count) to avoid overflow.
      const int64_t saturation = int64_t(INT_MAX) + 1;
      int64_t explicit_count = constant_count_ * in.count(0, start) * in.count(end);
      for (int i : copy_axes_)
        explicit_count = std::min(explicit_count, saturation) * shape[start + i];
      explicit_count = std::min(explicit_count, saturation);
      DLC_REQUIRE(explicit_count > 0 && in.count() % explicit_count == 0,
                  Where() << "cannot infer the -1 of the new shape " << ShapeText()
                          << ": the bottom count " << in.count() << " (shape "
                          << in.shape_string() << ") is not divisible by the product "
                          << explicit_count << " of the other dimensions");
      shape[start + inferred_axis_] = static_cast<int>(in.count() / explicit_count);
    }
    int64_t count = 1;
    for (int d : shape) count *= d;
    DLC_REQUIRE(count == in.count(), Where() << "the new shape " << ShapeText()
                                             << " gives " << count << " elements, the bottom "
                                             << in.shape_string() << " has " << in.count());
    top[0]->Reshape(shape);
    top[0]->ShareData(in);
    top[0]->ShareDiff(in);
  }

 private:
  std::string ShapeText() const {
    std::string s = "[";
    const caffe::BlobShape& shape = param_.reshape_param().shape();
    for (int i = 0; i < shape.dim_size(); ++i)
      s += (i ? " " : "") + std::to_string(shape.dim(i));
    return s + "]";
  }

  std::vector<int> copy_axes_;   // positions of 0 in the new shape
  int inferred_axis_ = -1;       // position of -1 in the new shape
  int64_t constant_count_ = 1;   // product of the explicit dimensions
};

REGISTER_LAYER_CLASS(Reshape);

}  // namespace dlcaffe
