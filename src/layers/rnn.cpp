// RNN (Caffe "RNN"): a simple recurrent network, unrolled over time as
// Caffe's RNNLayer does:
//     h_t = tanh(W_hh (cont_t * h_{t-1}) + W_xh x_t + b_h [+ W_xh_static x_static])
//     o_t = tanh(W_ho h_t + b_o)
// The top is o (T x N x num_output). Parameters, in Caffe's order:
// W_xh (num_output x input_dim), b_h, [W_xh_static (num_output x static_dim)],
// W_hh (num_output x num_output), W_ho (num_output x num_output), b_o.
// With expose_hidden: bottom h_0 (1 x N x num_output), top h_T.
#include "dlcaffe/layer_registry.hpp"
#include "core/recurrent_layer.hpp"

namespace dlcaffe {

class RNNLayer : public RecurrentLayer {
 public:
  using RecurrentLayer::RecurrentLayer;
  const char* type() const override { return "RNN"; }

 protected:
  std::vector<std::string> RecurrentInputBlobNames() const override { return {"h_0"}; }
  std::vector<std::string> RecurrentOutputBlobNames() const override {
    return {"h_" + std::to_string(T_)};
  }
  std::vector<caffe::BlobShape> RecurrentInputShapes() const override {
    caffe::BlobShape shape;
    shape.add_dim(1);  // a single time step
    shape.add_dim(N_);
    shape.add_dim(num_output());
    return {shape};
  }
  std::vector<std::string> OutputBlobNames() const override { return {"o"}; }

  void FillUnrolledNet(caffe::NetParameter* net_param) const override {
    const UnrollTemplates templates = Templates(num_output());
    caffe::LayerParameter tanh_param;
    tanh_param.set_type("TanH");
    const UnrollStart start = AddUnrollStart(net_param, templates, {"h_0"}, "W_xh", "b_h",
                                             "W_xh_static", num_output());
    caffe::LayerParameter output_concat = OutputConcat("o_concat", "o");

    for (int t = 1; t <= T_; ++t) {
      const std::string tm1s = std::to_string(t - 1);
      const std::string ts = std::to_string(t);
      start.cont_slice->add_top("cont_" + ts);
      start.x_slice->add_top("W_xh_x_" + ts);
      // h_t = tanh(W_hh (cont_t * h_{t-1}) + W_xh_x_t [+ W_xh_x_static])
      AddStepInput(net_param, templates, t, "W_hh_h_" + tm1s, "W_hh", "W_xh",
                   "h_input_sum_" + ts, "h_neuron_input_" + ts);
      {
        caffe::LayerParameter* layer = net_param->add_layer();
        *layer = tanh_param;
        layer->set_name("h_neuron_" + ts);
        layer->add_bottom("h_neuron_input_" + ts);
        layer->add_top("h_" + ts);
      }
      // o_t = tanh(W_ho * h_t + b_o)
      {
        caffe::LayerParameter* layer = net_param->add_layer();
        *layer = templates.biased_hidden;
        layer->set_name("W_ho_h_" + ts);
        layer->add_param()->set_name("W_ho");
        layer->add_param()->set_name("b_o");
        layer->add_bottom("h_" + ts);
        layer->add_top("W_ho_h_" + ts);
      }
      {
        caffe::LayerParameter* layer = net_param->add_layer();
        *layer = tanh_param;
        layer->set_name("o_neuron_" + ts);
        layer->add_bottom("W_ho_h_" + ts);
        layer->add_top("o_" + ts);
      }
      output_concat.add_bottom("o_" + ts);
    }
    *net_param->add_layer() = output_concat;
  }
};

REGISTER_LAYER_CLASS(RNN);

}  // namespace dlcaffe
