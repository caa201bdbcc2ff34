// Pad (dlcaffe; ONNX Pad, opset 11 and later): pads every axis d with
// pad_begin[d] elements before and pad_end[d] after, by `value` (CONSTANT),
// by reflection about the first/last element without repeating it
// (REFLECT), or by repeating the first/last element (EDGE). A negative
// amount crops that many elements from that side instead; as in
// onnxruntime, the crops apply first and the padding reflects or repeats
// the cropped input. Reflection wider than the axis continues periodically
// (numpy's np.pad, the ONNX reference); a reflected axis of one element
// repeats it (numpy again).
//
// The mapping is separable: top coordinate o of axis d copies bottom
// coordinate f_d(o) (or the constant). The host computes f_d and its
// inverse lists into one table (src/cl/pad.cl); forward gathers, backward
// sums, for each bottom element, the top diff over every top element that
// copies it (several under REFLECT and EDGE), so no two work-items write
// the same place.
#include <algorithm>
#include <string>
#include <vector>

#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {

constexpr int kMaxAxes = 8;

// pad.cl's pad_geometry.
struct PadGeometry {
  cl_int size[kMaxAxes];
  cl_int stride[kMaxAxes];
  cl_int forward[kMaxAxes];
  cl_int offsets[kMaxAxes];
  cl_int entries[kMaxAxes];
};

const char* ModeName(caffe::PadParameter_Mode mode) {
  return caffe::PadParameter_Mode_Name(mode).c_str();
}

}  // namespace

class PadLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Pad"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::PadParameter& p = param_.pad_param();
    DLC_REQUIRE(p.pad_begin_size() == p.pad_end_size(),
                Where() << "needs as many pad_end as pad_begin: " << p.pad_begin_size()
                        << " pad_begin, " << p.pad_end_size() << " pad_end");
    mode_ = p.mode();
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(top[0] != bottom[0], Where() << "cannot work in place");
    const caffe::PadParameter& p = param_.pad_param();
    const Blob& x = *bottom[0];
    const int rank = x.num_axes();
    DLC_REQUIRE(p.pad_begin_size() == rank,
                Where() << "needs one pad_begin and one pad_end per bottom axis: "
                        << p.pad_begin_size() << " for the bottom " << x.shape_string());
    // Axes, with neighbours that are neither padded nor cropped merged.
    struct Axis {
      int in, begin, end;
    };
    std::vector<Axis> axes;
    std::vector<int> top_shape(rank);
    for (int d = 0; d < rank; ++d) {
      const int n = x.shape(d), b = p.pad_begin(d), e = p.pad_end(d);
      const long out = long(n) + b + e;
      DLC_REQUIRE(std::max(0, -b) + long(std::max(0, -e)) <= n,
                  Where() << "axis " << d << " of the bottom " << x.shape_string()
                          << " has " << n << " elements; pad_begin " << b << " and pad_end "
                          << e << " crop more than that");
      DLC_REQUIRE(out <= INT32_MAX, Where() << "axis " << d << " would have " << out
                                            << " elements");
      const int kept = n - std::max(0, -b) - std::max(0, -e);
      DLC_REQUIRE(mode_ == caffe::PadParameter_Mode_CONSTANT || kept > 0 || out == 0,
                  Where() << ModeName(mode_) << " padding of axis " << d << " of the bottom "
                          << x.shape_string() << ": pad_begin " << b << " and pad_end " << e
                          << " leave no element to pad with");
      top_shape[d] = static_cast<int>(out);
      if (b == 0 && e == 0 && !axes.empty() && axes.back().begin == 0 && axes.back().end == 0) {
        axes.back().in *= n;
      } else {
        axes.push_back({n, b, e});
      }
    }
    if (axes.empty()) axes.push_back({1, 0, 0});
    const int merged = static_cast<int>(axes.size());
    DLC_REQUIRE(merged <= kMaxAxes,
                Where() << "the bottom " << x.shape_string() << " has " << merged
                        << " axes after merging neighbours without padding; at most "
                        << kMaxAxes << " are supported");
    top[0]->Reshape(top_shape);
    rank_ = merged;

    // The table (pad.cl) and the geometry of both passes.
    std::vector<int> table;
    forward_ = PadGeometry();
    backward_ = PadGeometry();
    int in_stride = 1, out_stride = 1;
    for (int d = merged - 1; d >= 0; --d) {
      const Axis& a = axes[d];
      const int out = a.in + a.begin + a.end;
      const int lo = std::max(0, -a.begin);
      const int kept = a.in - lo - std::max(0, -a.end);
      std::vector<std::vector<int>> copies(a.in);
      forward_.size[d] = out;
      forward_.stride[d] = in_stride;
      forward_.forward[d] = static_cast<int>(table.size());
      for (int o = 0; o < out; ++o) {
        const int from = Source(o - std::max(0, a.begin), kept);
        table.push_back(from < 0 ? -1 : lo + from);
        if (from >= 0) copies[lo + from].push_back(o);
      }
      backward_.size[d] = a.in;
      backward_.stride[d] = out_stride;
      backward_.offsets[d] = static_cast<int>(table.size());
      int offset = 0;
      for (int i = 0; i < a.in; ++i) {
        table.push_back(offset);
        offset += static_cast<int>(copies[i].size());
      }
      table.push_back(offset);
      backward_.entries[d] = static_cast<int>(table.size());
      for (const auto& list : copies) table.insert(table.end(), list.begin(), list.end());
      in_stride *= a.in;
      out_stride *= out;
    }
    if (table.empty()) table.push_back(0);
    const size_t bytes = table.size() * sizeof(int);
    if (!table_ || table_->bytes() < bytes) table_ = ctx_->Allocate(bytes);
    ctx_->Write(table_->mem(), 0, bytes, table.data());
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("pad.cl", Options(), "pad_forward"), n, n, forward_,
                   table_->mem(), param_.pad_param().value(), bottom[0]->data(),
                   top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("pad.cl", Options(), "pad_backward"), n, n, backward_,
                   table_->mem(), top[0]->diff(), bottom[0]->diff());
  }

 private:
  // The element of the kept (cropped) run of `kept` elements that position
  // p copies (p < 0: before the run, p >= kept: after it), or -1 for the
  // constant.
  int Source(int p, int kept) const {
    if (p >= 0 && p < kept) return p;
    switch (mode_) {
      case caffe::PadParameter_Mode_EDGE:
        return std::min(std::max(p, 0), kept - 1);
      case caffe::PadParameter_Mode_REFLECT: {
        if (kept == 1) return 0;
        const int period = 2 * (kept - 1);
        int q = p % period;
        if (q < 0) q += period;
        return q < kept ? q : period - q;
      }
      default:
        return -1;
    }
  }

  std::string Options() const { return "-DRANK=" + std::to_string(rank_); }

  caffe::PadParameter_Mode mode_ = caffe::PadParameter_Mode_CONSTANT;
  int rank_ = 1;
  PadGeometry forward_, backward_;
  BufferPtr table_;  // pad.cl's per-axis maps
};

REGISTER_LAYER_CLASS(Pad);

}  // namespace dlcaffe
