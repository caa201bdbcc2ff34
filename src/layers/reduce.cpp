// Reduce (dlcaffe; ONNX ReduceSum, ReduceMean, ReduceMax, ReduceMin,
// ReduceSumSquare, ReduceL1, ReduceL2): reduces the bottom over `axis` (any
// set; negative axes count from the end; none: every axis), keeping the
// reduced axes as size 1 (keepdims, the default) or dropping them (a blob of
// no axes when every axis goes).
//
// Gradients: SUM dy; MEAN dy / (reduced count); SUM_SQUARE 2 x dy; L1
// sign(x) dy (0 at x = 0); L2 x / y dy (0 where y = 0, as PyTorch's norm);
// MAX/MIN: dy to the elements equal to the extremum, split evenly between
// ties (PyTorch's amax/amin, the ops that export to ReduceMax/ReduceMin).
//
// The bottom's axes are merged into groups, each kept or reduced (axes of
// size 1 dropped). Reductions over an outer x channels x inner view (kept
// axes contiguous: reduce the leading, the trailing, or both ends, or all)
// are generated per-channel reductions (core/reduce_kernel.hpp) and their
// gradients pointwise kernels; other patterns take src/cl/reduce.cl, one
// work-item per top element.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/channel_sums.hpp"
#include "core/pointwise_kernel.hpp"
#include "core/reduce_kernel.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;
using Op = caffe::ReduceParameter_Operation;

constexpr int kMaxGroups = 8;

// reduce.cl's reduce_geometry.
struct ReduceGeometry {
  cl_int kept_size[kMaxGroups];
  cl_int kept_stride[kMaxGroups];
  cl_int red_size[kMaxGroups];
  cl_int red_stride[kMaxGroups];
  cl_int size[kMaxGroups];
  cl_int top_stride[kMaxGroups];
};

bool IsExtremum(Op op) {
  return op == caffe::ReduceParameter_Operation_MAX || op == caffe::ReduceParameter_Operation_MIN;
}

// The per-channel forward: y = the channel's reduction; n is the reduced count.
std::unique_ptr<ChannelReduceKernel> ForwardKernel(Op op) {
  std::vector<Reduction> reductions;
  std::string finish = "y = r;";
  switch (op) {
    case caffe::ReduceParameter_Operation_SUM:
      reductions = {Sum("r", "x")};
      break;
    case caffe::ReduceParameter_Operation_MEAN:
      reductions = {Sum("r", "x")};
      finish = "y = r / n;";
      break;
    case caffe::ReduceParameter_Operation_MAX:
      reductions = {Max("r", "x")};
      break;
    case caffe::ReduceParameter_Operation_MIN:
      reductions = {Max("r", "-x")};
      finish = "y = -r;";
      break;
    case caffe::ReduceParameter_Operation_SUM_SQUARE:
      reductions = {Sum("r", "x * x")};
      break;
    case caffe::ReduceParameter_Operation_L1:
      reductions = {Sum("r", "fabs(x)")};
      break;
    case caffe::ReduceParameter_Operation_L2:
      reductions = {Sum("r", "x * x")};
      finish = "y = sqrt(r);";
      break;
    default:
      DLC_FAIL("Reduce: unknown operation " << op);
  }
  return std::make_unique<ChannelReduceKernel>(
      "reduce_" + caffe::ReduceParameter_Operation_Name(op), std::vector<Arg>{In("x"), ChannelOut("y"), Scalar("n")},
      reductions, finish);
}

// The per-channel gradient: dx from x and the channel's y, dy and ties.
std::unique_ptr<PointwiseKernel> BackwardKernel(Op op) {
  std::string body;
  switch (op) {
    case caffe::ReduceParameter_Operation_SUM: body = "dx = dy;"; break;
    case caffe::ReduceParameter_Operation_MEAN: body = "dx = dy / n;"; break;
    case caffe::ReduceParameter_Operation_MAX:
    case caffe::ReduceParameter_Operation_MIN:
      body = "dx = x == y ? dy / ties : (real)0.f;";
      break;
    case caffe::ReduceParameter_Operation_SUM_SQUARE: body = "dx = 2.f * x * dy;"; break;
    case caffe::ReduceParameter_Operation_L1: body = "dx = sign(x) * dy;"; break;
    case caffe::ReduceParameter_Operation_L2: body = "dx = y > 0.f ? x / y * dy : (real)0.f;"; break;
    default:
      DLC_FAIL("Reduce: unknown operation " << op);
  }
  return std::make_unique<PointwiseKernel>(
      "reduce_backward_" + caffe::ReduceParameter_Operation_Name(op),
      std::vector<Arg>{In("x"), Channel("y"), Channel("dy"), Channel("ties"), Out("dx"),
                       Scalar("n")},
      body);
}

// MAX/MIN: per channel, how many elements equal the extremum.
const ChannelReduceKernel kCountTies("reduce_count_ties",
                                     {In("x"), Channel("y"), ChannelOut("ties")},
                                     {Sum("equal", "x == y ? (real)1.f : (real)0.f")},
                                     "ties = equal;");

}  // namespace

class ReduceLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Reduce"; }
  bool SupportsStorage(StorageType) const override { return true; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    op_ = param_.reduce_param().operation();
    forward_ = ForwardKernel(op_);
    backward_ = BackwardKernel(op_);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(top[0] != bottom[0], Where() << "cannot work in place");
    const caffe::ReduceParameter& p = param_.reduce_param();
    const Blob& x = *bottom[0];
    const int rank = x.num_axes();
    std::vector<bool> reduced(rank, p.axis_size() == 0);
    for (int k = 0; k < p.axis_size(); ++k) {
      const int a = p.axis(k);
      DLC_REQUIRE(a >= -rank && a < rank, Where() << "axis " << a
                                                  << " is out of range for the bottom "
                                                  << x.shape_string());
      const int d = a < 0 ? a + rank : a;
      DLC_REQUIRE(!reduced[d], Where() << "axis " << d << " is listed twice");
      reduced[d] = true;
    }
    std::vector<int> shape;
    count_ = 1;
    for (int d = 0; d < rank; ++d) {
      if (!reduced[d]) {
        shape.push_back(x.shape(d));
      } else {
        count_ *= x.shape(d);
        if (p.keepdims()) shape.push_back(1);
      }
    }
    top[0]->Reshape(shape);

    // Groups of merged axes, kept or reduced, size-1 axes dropped.
    groups_.clear();
    for (int d = 0; d < rank; ++d) {
      if (x.shape(d) == 1) continue;
      if (!groups_.empty() && groups_.back().reduced == reduced[d]) {
        groups_.back().size *= x.shape(d);
      } else {
        groups_.push_back({x.shape(d), reduced[d]});
      }
    }
    // Per channel: [reduced] [kept] [reduced], each part optional.
    size_t g = 0;
    outer_ = channels_ = inner_ = 1;
    if (g < groups_.size() && groups_[g].reduced) outer_ = groups_[g++].size;
    if (g < groups_.size() && !groups_[g].reduced) channels_ = groups_[g++].size;
    if (g < groups_.size() && groups_[g].reduced) inner_ = groups_[g++].size;
    // The per-channel kernels write a float top; 16-bit blobs take the
    // general kernels.
    per_channel_ = g == groups_.size() && x.storage_type() == StorageType::kFloat32;
    storage_ = x.storage_type();
    if (!per_channel_) {
      DLC_REQUIRE(groups_.size() <= size_t(kMaxGroups),
                  Where() << "reducing axes " << AxesString(reduced) << " of "
                          << x.shape_string() << " alternates between kept and reduced axes "
                          << groups_.size() << " times; at most " << kMaxGroups
                          << " are supported");
      SetGeometry();
    }
    if (IsExtremum(op_)) {
      const size_t bytes = std::max(top[0]->count(), 1) * sizeof(float);
      if (!ties_ || ties_->bytes() < bytes) ties_ = ctx_->Allocate(bytes);
    }
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (bottom[0]->count() == 0) return;
    if (per_channel_) {
      forward_->Launch(*ctx_, workspace_, outer_, channels_, inner_,
                       {bottom[0]->data(), top[0]->data()}, {float(count_)},
                       KernelShapeOf(choices_));
      return;
    }
    const int n = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("reduce.cl", Options(), "reduce_forward"), n, n, geometry_,
                   float(count_), bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0] || bottom[0]->count() == 0) return;
    const cl_mem x = bottom[0]->data(), y = top[0]->data();
    const cl_mem ties = IsExtremum(op_) ? ties_->mem() : y;  // unread unless MAX/MIN
    if (per_channel_) {
      if (IsExtremum(op_))
        kCountTies.Launch(*ctx_, workspace_, outer_, channels_, inner_, {x, y, ties}, {},
                          KernelShapeOf(choices_));
      backward_->Launch(*ctx_, bottom[0]->count(), {x, y, top[0]->diff(), ties, bottom[0]->diff()},
                        {float(count_)}, {channels_, inner_}, KernelShapeOf(choices_));
      return;
    }
    if (IsExtremum(op_)) {
      const int n = top[0]->count();
      ctx_->Launch1D(ctx_->Kernel("reduce.cl", Options(), "reduce_count_ties"), n, n,
                     geometry_, x, y, ties);
    }
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("reduce.cl", Options(), "reduce_backward"), n, n, geometry_,
                   float(count_), x, y, top[0]->diff(), ties, bottom[0]->diff());
  }

 private:
  struct Group {
    int size;
    bool reduced;
  };

  // reduce.cl's geometry from the groups.
  void SetGeometry() {
    geometry_ = ReduceGeometry();
    kept_ = red_ = 0;
    for (const Group& g : groups_) (g.reduced ? red_ : kept_)++;
    int stride = 1, top_stride = 1, k = kept_, r = red_;
    for (int d = static_cast<int>(groups_.size()) - 1; d >= 0; --d) {
      const Group& g = groups_[d];
      geometry_.size[d] = g.size;
      if (g.reduced) {
        --r;
        geometry_.red_size[r] = g.size;
        geometry_.red_stride[r] = stride;
        geometry_.top_stride[d] = 0;
      } else {
        --k;
        geometry_.kept_size[k] = g.size;
        geometry_.kept_stride[k] = stride;
        geometry_.top_stride[d] = top_stride;
        top_stride *= g.size;
      }
      stride *= g.size;
    }
  }

  std::string Options() const {
    return "-DKEPT=" + std::to_string(kept_) + " -DRED=" + std::to_string(red_) +
           " -DOP=" + std::to_string(int(op_)) + StorageOption("DATA_TYPE", storage_);
  }

  static std::string AxesString(const std::vector<bool>& reduced) {
    std::string s;
    for (size_t d = 0; d < reduced.size(); ++d)
      if (reduced[d]) s += (s.empty() ? "" : " ") + std::to_string(d);
    return s;
  }

  Op op_ = caffe::ReduceParameter_Operation_SUM;
  std::unique_ptr<ChannelReduceKernel> forward_;
  std::unique_ptr<PointwiseKernel> backward_;
  int count_ = 1;  // reduced elements per top element
  std::vector<Group> groups_;
  // Per-channel form: outer x channels x inner, reducing outer and inner.
  bool per_channel_ = true;
  StorageType storage_ = StorageType::kFloat32;  // x's and y's
  int outer_ = 1, channels_ = 1, inner_ = 1;
  // reduce.cl's form.
  int kept_ = 0, red_ = 0;
  ReduceGeometry geometry_;
  ReduceWorkspace workspace_;
  BufferPtr ties_;  // MAX/MIN: per top element, the elements equal to it
};

REGISTER_LAYER_CLASS(Reduce);

}  // namespace dlcaffe
