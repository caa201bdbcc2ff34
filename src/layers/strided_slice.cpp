// StridedSlice (dlcaffe; ONNX Slice): along each listed axis the top keeps
// the bottom's elements start, start + step, ... before end; the other axes
// are kept whole. An empty `axis` list means the first start_size() axes
// (ONNX's default axes); an empty `step` list means 1 on every listed axis.
// With a second bottom, the ends are its values (one per listed axis, read
// to the host at each Reshape) instead of `end`: ONNX Slice to sizes that
// follow the data.
//
// ONNX's rules, per listed axis of size n: a negative start or end has n
// added to it; then with step > 0 both are clamped to [0, n], with step < 0
// start is clamped to [0, n - 1] and end to [-1, n - 1] (so INT32_MAX or
// INT32_MIN reach the edge in either direction); the axis keeps
// max(0, ceil((end - start) / step)) elements. A step of 0 is an error.
//
// Forward gathers through a strided view (core/strided_copy.hpp); backward
// zeroes the bottom's diff and scatters the top's diff into it.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "core/strided_copy.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class StridedSliceLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "StridedSlice"; }
  // Moves values as they are stored.
  bool SupportsStorage(StorageType) const override { return true; }
  int MinBottomBlobs() const override { return 1; }
  // Bottom 1: the ends, one per listed axis, read at run time.
  int MaxBottomBlobs() const override { return 2; }
  bool KeepsBottomInFloat(int index) const override { return index == 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::StridedSliceParameter& p = param_.strided_slice_param();
    const int n = p.start_size();
    DLC_REQUIRE(p.end_size() == n, Where() << "needs one end per start: " << n
                                           << " start(s), " << p.end_size() << " end(s)");
    DLC_REQUIRE(p.axis_size() == 0 || p.axis_size() == n,
                Where() << "needs one axis per start (or none): " << n << " start(s), "
                        << p.axis_size() << " axis/axes");
    DLC_REQUIRE(p.step_size() == 0 || p.step_size() == n,
                Where() << "needs one step per start (or none): " << n << " start(s), "
                        << p.step_size() << " step(s)");
    for (int k = 0; k < p.step_size(); ++k)
      DLC_REQUIRE(p.step(k) != 0, Where() << "step " << k << " is 0");
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(top[0] != bottom[0], Where() << "cannot work in place");
    const caffe::StridedSliceParameter& p = param_.strided_slice_param();
    const Blob& x = *bottom[0];
    const int rank = x.num_axes();
    std::vector<int> start(rank, 0), step(rank, 1), shape = x.shape();
    std::vector<bool> listed(rank, false);
    std::vector<float> ends;
    if (bottom.size() > 1) {
      // Ends known only at run time (a split at the data's own sizes): read
      // here, right before Forward, where the bottoms hold them.
      DLC_REQUIRE(bottom[1]->count() == p.start_size(),
                  Where() << "bottom 1 must hold one end per listed axis (" << p.start_size()
                          << "), got shape " << bottom[1]->shape_string());
      ends.resize(p.start_size());
      if (!ends.empty()) ctx_->Read(bottom[1]->data(), 0, ends.size() * sizeof(float), ends.data());
    }
    for (int k = 0; k < p.start_size(); ++k) {
      const int a = p.axis_size() ? p.axis(k) : k;
      DLC_REQUIRE(a >= -rank && a < rank, Where() << "axis " << a << " is out of range for the bottom "
                                                  << x.shape_string());
      const int d = a < 0 ? a + rank : a;
      DLC_REQUIRE(!listed[d], Where() << "axis " << d << " is listed twice");
      listed[d] = true;
      const int64_t size = x.shape(d);
      const int64_t s = p.step_size() ? p.step(k) : 1;
      int64_t b = p.start(k),
              e = ends.empty() ? p.end(k)
                               : static_cast<int64_t>(std::clamp<double>(ends[k], INT32_MIN, INT32_MAX));
      if (b < 0) b += size;
      if (e < 0) e += size;
      if (s > 0) {
        b = std::min(std::max<int64_t>(b, 0), size);
        e = std::min(std::max<int64_t>(e, 0), size);
      } else {
        b = std::min(std::max<int64_t>(b, 0), size - 1);
        e = std::min(std::max<int64_t>(e, -1), size - 1);
      }
      // ceil((e - b) / s) for s of either sign, at least 0.
      const int64_t kept = s > 0 ? (e - b + s - 1) / s : (b - e + (-s) - 1) / (-s);
      shape[d] = static_cast<int>(std::max<int64_t>(kept, 0));
      start[d] = static_cast<int>(shape[d] > 0 ? b : 0);
      step[d] = static_cast<int>(s);
    }
    view_ = StridedView();
    for (int d = 0; d < rank; ++d) {
      const int stride = x.count(d + 1);
      view_.size.push_back(shape[d]);
      view_.stride.push_back(step[d] * stride);
      view_.base += start[d] * stride;
    }
    CheckStridedView(view_, Where());
    top[0]->Reshape(shape);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    StridedGather(*ctx_, view_, bottom[0]->data(), top[0]->data(),
                  bottom[0]->storage_type());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (bottom.size() > 1 && propagate_down[1]) bottom[1]->SetDiff(0.f);
    if (!propagate_down[0]) return;
    bottom[0]->SetDiff(0.f);
    StridedScatter(*ctx_, view_, top[0]->diff(), bottom[0]->diff(),
                   bottom[0]->storage_type());
  }

 private:
  StridedView view_;  // top element -> bottom element
};

REGISTER_LAYER_CLASS(StridedSlice);

}  // namespace dlcaffe
