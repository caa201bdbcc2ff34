// Embed (Caffe "Embed"): a lookup table. Each input value is an index into
// the input_dim x num_output weight blob (Caffe's layout, so .caffemodel
// files load); the top has the input's shape plus a num_output axis, plus the
// bias with bias_term. The weight gradient sums the rows' gradients without
// atomics (one work-item per weight row scans the batch); indices get no
// gradient.
//
// Indices are never read on the host. One that is not an integer in
// [0, input_dim) is a user error, found lazily as SoftmaxWithLoss finds bad
// labels: a kernel records the first on the device and that pass's rows are
// NaN; a non-blocking read brings the record to the host, and the next
// Forward after that read has completed throws.
#include <CL/cl.h>

#include <cstring>

#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {

// The first bad index (or label) a kernel met, reported one pass late
// without waiting for the device (SoftmaxWithLoss's approach): kernels write
// {position, value bits} into record() unless a position is there already; a
// non-blocking read brings it to the host, and a later pass throws.
class LateLabelCheck {
 public:
  explicit LateLabelCheck(Context& ctx) : ctx_(ctx), record_(ctx.Allocate(2 * sizeof(cl_int))) {
    Reset();
  }
  ~LateLabelCheck() {
    if (!read_) return;
    clWaitForEvents(1, &read_);  // it writes into this object
    clReleaseEvent(read_);
  }
  LateLabelCheck(const LateLabelCheck&) = delete;
  LateLabelCheck& operator=(const LateLabelCheck&) = delete;

  cl_mem record() const { return record_->mem(); }

  // After a pass's kernels: starts the read, at most one in flight.
  void ReadLater() {
    if (read_) return;
    DLC_CL_CHECK(clEnqueueReadBuffer(ctx_.queue(), record_->mem(), CL_FALSE, 0, sizeof(host_),
                                     host_, 0, nullptr, &read_));
  }

  // Before a pass: true, with the bad value and its position, once a
  // finished read has brought a record (which is then cleared).
  bool TakeError(int* position, float* label) {
    if (!read_) return false;
    cl_int status = CL_QUEUED;
    DLC_CL_CHECK(clGetEventInfo(read_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status),
                                &status, nullptr));
    if (status > CL_COMPLETE) return false;  // still queued or running
    clReleaseEvent(read_);
    read_ = nullptr;
    if (status < 0) ThrowClError("reading a label or index check", status);
    if (host_[0] < 0) return false;
    *position = host_[0];
    std::memcpy(label, &host_[1], sizeof(*label));
    host_[0] = -1;
    Reset();
    return true;
  }

 private:
  void Reset() {
    const cl_int none[2] = {-1, 0};
    ctx_.Write(record_->mem(), 0, sizeof(none), none);
  }

  Context& ctx_;
  BufferPtr record_;
  cl_int host_[2] = {-1, 0};
  cl_event read_ = nullptr;
};

}  // namespace

class EmbedLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Embed"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return false; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::EmbedParameter& p = param_.embed_param();
    num_output_ = static_cast<int>(p.num_output());
    input_dim_ = static_cast<int>(p.input_dim());
    DLC_REQUIRE(num_output_ > 0, Where() << "num_output must be set and positive");
    DLC_REQUIRE(input_dim_ > 0, Where() << "input_dim must be set and positive");
    bias_term_ = p.bias_term();
    if (blobs_.empty()) {  // else shared or loaded already
      blobs_.push_back(std::make_shared<Blob>(*ctx_, std::vector<int>{input_dim_, num_output_}));
      FillBlob(p.weight_filler(), blobs_[0].get());
      if (bias_term_) {
        blobs_.push_back(std::make_shared<Blob>(*ctx_, std::vector<int>{num_output_}));
        FillBlob(p.bias_filler(), blobs_[1].get());
      }
    }
    for (size_t i = 0; i < blobs_.size(); ++i) set_param_propagate_down(i, true);
    index_check_ = std::make_unique<LateLabelCheck>(*ctx_);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    std::vector<int> top_shape = bottom[0]->shape();
    top_shape.push_back(num_output_);
    top[0]->Reshape(top_shape);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    int position;
    float index;
    if (index_check_->TakeError(&position, &index))
      DLC_FAIL(Where() << "index " << index << " at position " << position
                       << " of the input is not an integer in [0, " << input_dim_
                       << ") (input_dim) (found after an earlier forward pass, whose output "
                          "rows for it were NaN)");
    const int m = bottom[0]->count();
    if (m == 0) return;
    ctx_->Launch(ctx_->Kernel("embed.cl", "", "embed_check_indices"), NDRange(kCheckGroup),
                 NDRange(kCheckGroup), m, input_dim_, bottom[0]->data(), index_check_->record());
    const cl_mem bias = bias_term_ ? blobs_[1]->data() : blobs_[0]->data();  // unused without
    const int count = m * num_output_;
    ctx_->Launch1D(ctx_->Kernel("embed.cl", "", "embed_forward"), count, count, num_output_,
                   input_dim_, (int)bias_term_, bottom[0]->data(), blobs_[0]->data(), bias,
                   top[0]->data());
    index_check_->ReadLater();
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[0], Where() << "cannot backpropagate to the indices");
    const int m = bottom[0]->count();
    if (param_propagate_down(0)) {
      ctx_->Launch1D(ctx_->Kernel("embed.cl", "", "embed_weight_backward"), input_dim_,
                     input_dim_, num_output_, m, bottom[0]->data(), top[0]->diff(),
                     blobs_[0]->diff());
    }
    if (bias_term_ && param_propagate_down(1)) {
      ctx_->Launch1D(ctx_->Kernel("embed.cl", "", "embed_bias_backward"), num_output_,
                     num_output_, m, top[0]->diff(), blobs_[1]->diff());
    }
  }

 private:
  static constexpr size_t kCheckGroup = 64;  // EMBED_GROUP in embed.cl

  int num_output_ = 0, input_dim_ = 0;
  bool bias_term_ = true;
  std::unique_ptr<LateLabelCheck> index_check_;
};

REGISTER_LAYER_CLASS(Embed);

}  // namespace dlcaffe
