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
    const caffe::RecurrentParameter& rp = param_.recurrent_param();

    // Templates of the layers used below.
    caffe::LayerParameter hidden_param;
    hidden_param.set_type("InnerProduct");
    hidden_param.mutable_inner_product_param()->set_num_output(num_output() * 4);
    hidden_param.mutable_inner_product_param()->set_bias_term(false);
    hidden_param.mutable_inner_product_param()->set_axis(2);
    *hidden_param.mutable_inner_product_param()->mutable_weight_filler() = rp.weight_filler();

    caffe::LayerParameter biased_hidden_param(hidden_param);
    biased_hidden_param.mutable_inner_product_param()->set_bias_term(true);
    *biased_hidden_param.mutable_inner_product_param()->mutable_bias_filler() =
        rp.bias_filler();

    caffe::LayerParameter sum_param;
    sum_param.set_type("Eltwise");
    sum_param.mutable_eltwise_param()->set_operation(caffe::EltwiseParameter_EltwiseOp_SUM);

    caffe::LayerParameter scale_param;
    scale_param.set_type("Scale");
    scale_param.mutable_scale_param()->set_axis(0);

    caffe::LayerParameter slice_param;
    slice_param.set_type("Slice");
    slice_param.mutable_slice_param()->set_axis(0);

    // c_0 before h_0, as in Caffe (both 1 x N x num_output).
    caffe::LayerParameter* input_layer = net_param->add_layer();
    input_layer->set_name("recurrent_input");
    input_layer->set_type("Input");
    const std::vector<caffe::BlobShape> shapes = RecurrentInputShapes();
    input_layer->add_top("c_0");
    *input_layer->mutable_input_param()->add_shape() = shapes[0];
    input_layer->add_top("h_0");
    *input_layer->mutable_input_param()->add_shape() = shapes[1];

    caffe::LayerParameter* cont_slice = net_param->add_layer();
    *cont_slice = slice_param;
    cont_slice->set_name("cont_slice");
    cont_slice->add_bottom("cont");
    StoreInFloat(cont_slice);  // cont's readers take it in float

    // W_xc_x = W_xc * x + b_c, all time steps at once.
    {
      caffe::LayerParameter* layer = net_param->add_layer();
      *layer = biased_hidden_param;
      layer->set_name("x_transform");
      layer->add_param()->set_name("W_xc");
      layer->add_param()->set_name("b_c");
      layer->add_bottom("x");
      layer->add_top("W_xc_x");
      layer->add_propagate_down(true);
    }

    if (static_input_) {
      // W_xc_x_static = W_xc_static * x_static, as one time step.
      caffe::LayerParameter* layer = net_param->add_layer();
      *layer = hidden_param;
      layer->mutable_inner_product_param()->set_axis(1);
      layer->set_name("W_xc_x_static");
      layer->add_param()->set_name("W_xc_static");
      layer->add_bottom("x_static");
      layer->add_top("W_xc_x_static_preshape");
      layer->add_propagate_down(true);

      caffe::LayerParameter* reshape = net_param->add_layer();
      reshape->set_type("Reshape");
      caffe::BlobShape* shape = reshape->mutable_reshape_param()->mutable_shape();
      shape->add_dim(1);   // one time step
      shape->add_dim(-1);  // the streams, inferred so the batch may change
      shape->add_dim(num_output() * 4);
      reshape->set_name("W_xc_x_static_reshape");
      reshape->add_bottom("W_xc_x_static_preshape");
      reshape->add_top("W_xc_x_static");
    }

    caffe::LayerParameter* x_slice = net_param->add_layer();
    *x_slice = slice_param;
    x_slice->add_bottom("W_xc_x");
    x_slice->set_name("W_xc_x_slice");

    caffe::LayerParameter output_concat;
    output_concat.set_name("h_concat");
    output_concat.set_type("Concat");
    output_concat.add_top("h");
    output_concat.mutable_concat_param()->set_axis(0);

    for (int t = 1; t <= T_; ++t) {
      const std::string tm1s = std::to_string(t - 1);
      const std::string ts = std::to_string(t);
      cont_slice->add_top("cont_" + ts);
      x_slice->add_top("W_xc_x_" + ts);

      // h_conted_{t-1} = cont_t * h_{t-1}: a new sequence forgets the state.
      {
        caffe::LayerParameter* layer = net_param->add_layer();
        *layer = scale_param;
        layer->set_name("h_conted_" + tm1s);
        layer->add_bottom("h_" + tm1s);
        layer->add_bottom("cont_" + ts);
        layer->add_top("h_conted_" + tm1s);
      }
      // W_hc_h_{t-1} = W_hc * h_conted_{t-1}
      {
        caffe::LayerParameter* layer = net_param->add_layer();
        *layer = hidden_param;
        layer->set_name("transform_" + ts);
        layer->add_param()->set_name("W_hc");
        layer->add_bottom("h_conted_" + tm1s);
        layer->add_top("W_hc_h_" + tm1s);
      }
      // gate_input_t = W_hc_h_{t-1} + W_xc_x_t [+ W_xc_x_static]
      {
        caffe::LayerParameter* layer = net_param->add_layer();
        *layer = sum_param;
        layer->set_name("gate_input_" + ts);
        layer->add_bottom("W_hc_h_" + tm1s);
        layer->add_bottom("W_xc_x_" + ts);
        if (static_input_) layer->add_bottom("W_xc_x_static");
        layer->add_top("gate_input_" + ts);
      }
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
