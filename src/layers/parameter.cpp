// Parameter (Caffe "Parameter"): no bottom; one learnable blob of
// parameter_param.shape, exposed as the top. The top shares the blob's data;
// backward accumulates the top diff into the blob's diff (Caffe shares the
// diff too, which gives the same gradient but would not accumulate over
// iter_size passes). As in Caffe the blob starts at zero: the values come from
// a .caffemodel or from training.
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

class ParameterLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Parameter"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (!blobs_.empty()) return;  // already set up (weights loaded or shared)
    blobs_.push_back(std::make_shared<Blob>(*ctx_));
    blobs_[0]->Reshape(param_.parameter_param().shape());
    blobs_[0]->SetData(0.f);  // as Caffe's: zeros until loaded or learned
    set_param_propagate_down(0, true);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    top[0]->ReshapeLike(*blobs_[0]);
    top[0]->ShareData(*blobs_[0]);
  }

  // Re-shares in case the parameter was given other storage since Reshape
  // (a net shares weights by name, a test net uses the train net's).
  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    top[0]->ShareData(*blobs_[0]);
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!param_propagate_down(0)) return;
    Axpy(*ctx_, top[0]->count(), 1.f, top[0]->diff(), 0, blobs_[0]->diff(), 0);
  }
};

REGISTER_LAYER_CLASS(Parameter);

}  // namespace dlcaffe
