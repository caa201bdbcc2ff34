// RecurrentLayer: the shared base of RNN and LSTM, as Caffe's RecurrentLayer.
//
// The recurrence is unrolled over the T time steps of the input into an
// internal Net, built from a NetParameter that the subclass generates
// (FillUnrolledNet). Its layers share their parameters across time steps by
// name, and this layer's blobs() are that net's parameters in Caffe's order,
// so .caffemodel files load unchanged.
//
// Bottoms: x (T x N x ...), cont (T x N) — the sequence continuation
// indicators (0 starts a new sequence in that stream at that step) — then
// optionally x_static (N x ...), an input shared by every step, then, with
// recurrent_param.expose_hidden, the initial recurrent states.
// Tops: the output (T x N x num_output), then, with expose_hidden, the
// recurrent states after the last step.
//
// The unrolled net's inputs and outputs share storage with the bottoms and
// tops, so nothing is copied. Without expose_hidden, the state after the last
// step is carried into the next Forward (as Caffe does; cont = 0 at the first
// step discards it). With expose_hidden, Caffe only passes the states forward;
// here gradients also flow into the initial-state bottoms and from the
// final-state tops, so the layer is differentiable in all of its inputs.
//
// Mixed precision: the unrolled net stores what this layer stores (x's
// type; cont stays float32) and its matrix products multiply in this
// layer's forward_math / backward_math. Its layers inherit both through the
// unrolled net's defaults, which its own storage pass copies into each.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/layer.hpp"
#include "dlcaffe/net.hpp"

namespace dlcaffe {

class RecurrentLayer : public Layer {
 public:
  using Layer::Layer;

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override;
  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override;
  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override;
  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override;

  int MinBottomBlobs() const override;
  int MaxBottomBlobs() const override { return MinBottomBlobs() + 1; }
  // The hidden state would have to carry over between passes.
  bool DecodesIncrementally() const override { return false; }
  int ExactNumTopBlobs() const override;
  // The sequence continuation indicators take no gradient.
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 1; }
  // Every layer of the unrolled net stores 16 bits; cont stays float32.
  bool SupportsStorage(StorageType) const override { return true; }
  bool KeepsBottomInFloat(int index) const override { return index == 1; }

  // The unrolled net (LayerSetUp), for tests and tools to look inside.
  const Net& unrolled_net() const { return *unrolled_net_; }

 protected:
  // Adds the recurrent architecture to `net_param`, whose first layer (an
  // Input) already provides "x", "cont" and, with a static input, "x_static".
  virtual void FillUnrolledNet(caffe::NetParameter* net_param) const = 0;
  // Names of the recurrent states before the first step ("h_0", ...), the
  // matching names after the last step, and the shapes of the former.
  virtual std::vector<std::string> RecurrentInputBlobNames() const = 0;
  virtual std::vector<std::string> RecurrentOutputBlobNames() const = 0;
  virtual std::vector<caffe::BlobShape> RecurrentInputShapes() const = 0;
  // Names of the outputs concatenated over time, one per non-state top.
  virtual std::vector<std::string> OutputBlobNames() const = 0;

  int num_output() const { return static_cast<int>(param_.recurrent_param().num_output()); }
  // Keeps an unrolled layer in float32 whatever this layer stores: those
  // that carry cont, whose readers take it in float.
  static void StoreInFloat(caffe::LayerParameter* layer);

  // What LSTM's and RNN's unrolled nets share, as Caffe writes them.
  // The layers they are made from: InnerProducts over axis 2 to `width`
  // outputs with the recurrent weight filler (without and with a bias), an
  // Eltwise SUM, a Scale along axis 0 (by cont) and a Slice along axis 0
  // (into time steps).
  struct UnrollTemplates {
    caffe::LayerParameter hidden, biased_hidden, sum, scale, slice;
  };
  UnrollTemplates Templates(int width) const;
  // The unrolled net's first layers: the Input of the states `states`
  // (RecurrentInputShapes' shapes, in that order), the
  // slice of cont into steps, "<x_weight>_x" = x_weight * x + bias over all
  // steps, with a static input "<x_weight>_x_static" (x_static_weight *
  // x_static as one step), and the slice of "<x_weight>_x" into steps. The
  // two slices are returned: each step adds its tops ("cont_t", ...).
  struct UnrollStart {
    caffe::LayerParameter* cont_slice;
    caffe::LayerParameter* x_slice;
  };
  UnrollStart AddUnrollStart(caffe::NetParameter* net, const UnrollTemplates& templates,
                             const std::vector<std::string>& states, const std::string& x_weight,
                             const std::string& bias, const std::string& x_static_weight,
                             int width) const;
  // Step t's input to its nonlinearity: h_conted_{t-1} = cont_t * h_{t-1},
  // "<h_weight>_h_{t-1}" = h_weight * h_conted_{t-1} (layer `transform`),
  // and `sum` (layer and top `sum_top`) = that + "<x_weight>_x_t" [+ the
  // static input's].
  void AddStepInput(caffe::NetParameter* net, const UnrollTemplates& templates, int t,
                    const std::string& transform, const std::string& h_weight,
                    const std::string& x_weight, const std::string& sum,
                    const std::string& sum_top) const;
  // The Concat over time of `top`'s steps (each step adds its bottom);
  // FillUnrolledNet appends it last.
  static caffe::LayerParameter OutputConcat(const std::string& name, const std::string& top);

  int T_ = 0;  // time steps, fixed at setup
  int N_ = 0;  // independent streams
  int state_streams_ = 0;  // the streams the carried state was last zeroed for
  bool static_input_ = false;
  bool expose_hidden_ = false;

 private:
  // Points the per-step copies of each shared parameter at its owner again
  // (a test net's ShareTrainedLayersWith replaces the owners' storage).
  void ReshareParameters();
  // Runs the unrolled net layer by layer, logging mean absolute values as
  // Caffe's debug_info does (this reads to the host, for debugging only).
  void ForwardWithDebugInfo();
  void BackwardWithDebugInfo();

  std::unique_ptr<Net> unrolled_net_;
  // The last layer that runs; the pseudo-losses after it only make the net
  // compute gradients for the outputs.
  int last_layer_index_ = 0;
  Blob* x_input_blob_ = nullptr;
  Blob* cont_input_blob_ = nullptr;
  Blob* x_static_input_blob_ = nullptr;
  std::vector<Blob*> recur_input_blobs_;
  std::vector<Blob*> recur_output_blobs_;
  std::vector<Blob*> output_blobs_;
  // With expose_hidden: where the final-state tops' gradients enter the net
  // (the blob feeding each state's pseudo-loss, which backward sums in).
  std::vector<Blob*> recur_output_grad_blobs_;
};

}  // namespace dlcaffe
