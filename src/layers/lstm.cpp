// LSTM (Caffe "LSTM"): a long short-term memory network, unrolled over time
// as Caffe's LSTMLayer does. Per step, with gate inputs in Caffe's order
// (i, f, o, g):
//     [i' f' o' g'] = W_hc (cont_t * h_{t-1}) + W_xc x_t + b_c [+ W_xc_static x_static]
//     c_t = cont_t * sigmoid(f') * c_{t-1} + sigmoid(i') * tanh(g')
//     h_t = sigmoid(o') * tanh(c_t)
// (an LSTMUnit layer computes the last two lines). The top is h
// (T x N x num_output). Parameters, in Caffe's order: W_xc (4 num_output x
// input_dim), b_c (4 num_output), [W_xc_static (4 num_output x static_dim)],
// W_hc (4 num_output x num_output).
// With expose_hidden: bottoms h_0, c_0 (1 x N x num_output), tops h_T, c_T.
#include "dlcaffe/layer_registry.hpp"
#include "core/recurrent_layer.hpp"

namespace dlcaffe {

class LSTMLayer : public RecurrentLayer {
 public:
  using RecurrentLayer::RecurrentLayer;
  const char* type() const override { return "LSTM"; }

 protected:
  std::vector<std::string> RecurrentInputBlobNames() const override { return {"h_0", "c_0"}; }
  std::vector<std::string> RecurrentOutputBlobNames() const override {
    return {"h_" + std::to_string(T_), "c_T"};
  }
  std::vector<caffe::BlobShape> RecurrentInputShapes() const override {
    caffe::BlobShape shape;
    shape.add_dim(1);  // a single time step
    shape.add_dim(N_);
    shape.add_dim(num_output());
    return {shape, shape};
  }
  std::vector<std::string> OutputBlobNames() const override { return {"h"}; }

  void FillUnrolledNet(caffe::NetParameter* net_param) const override {
    const UnrollTemplates templates = Templates(num_output() * 4);
    // c_0 before h_0, as in Caffe (both 1 x N x num_output).
    const UnrollStart start = AddUnrollStart(net_param, templates, {"c_0", "h_0"}, "W_xc",
                                             "b_c", "W_xc_static", num_output() * 4);
    caffe::LayerParameter output_concat = OutputConcat("h_concat", "h");

    for (int t = 1; t <= T_; ++t) {
      const std::string tm1s = std::to_string(t - 1);
      const std::string ts = std::to_string(t);
      start.cont_slice->add_top("cont_" + ts);
      start.x_slice->add_top("W_xc_x_" + ts);
      // gate_input_t = W_hc (cont_t * h_{t-1}) + W_xc_x_t [+ W_xc_x_static]
      AddStepInput(net_param, templates, t, "transform_" + ts, "W_hc", "W_xc",
                   "gate_input_" + ts, "gate_input_" + ts);
      // (c_t, h_t) = LSTMUnit(c_{t-1}, gate_input_t, cont_t)
      {
        caffe::LayerParameter* layer = net_param->add_layer();
        layer->set_type("LSTMUnit");
        layer->set_name("unit_" + ts);
        layer->add_bottom("c_" + tm1s);
        layer->add_bottom("gate_input_" + ts);
        layer->add_bottom("cont_" + ts);
        layer->add_top("c_" + ts);
        layer->add_top("h_" + ts);
      }
      output_concat.add_bottom("h_" + ts);
    }

    {
      caffe::LayerParameter* layer = net_param->add_layer();
      layer->set_type("Split");
      layer->set_name("c_T_copy");
      layer->add_bottom("c_" + std::to_string(T_));
      layer->add_top("c_T");
    }
    *net_param->add_layer() = output_concat;
  }
};

REGISTER_LAYER_CLASS(LSTM);

}  // namespace dlcaffe
