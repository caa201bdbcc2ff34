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
    const caffe::RecurrentParameter& rp = param_.recurrent_param();

    // Templates of the layers used below.
    caffe::LayerParameter hidden_param;
    hidden_param.set_type("InnerProduct");
    hidden_param.mutable_inner_product_param()->set_num_output(num_output());
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

    caffe::LayerParameter tanh_param;
    tanh_param.set_type("TanH");

    caffe::LayerParameter scale_param;
    scale_param.set_type("Scale");
    scale_param.mutable_scale_param()->set_axis(0);

    caffe::LayerParameter slice_param;
    slice_param.set_type("Slice");
    slice_param.mutable_slice_param()->set_axis(0);

    caffe::LayerParameter* input_layer = net_param->add_layer();
    input_layer->set_name("recurrent_input");
    input_layer->set_type("Input");
    input_layer->add_top("h_0");
    *input_layer->mutable_input_param()->add_shape() = RecurrentInputShapes()[0];

    caffe::LayerParameter* cont_slice = net_param->add_layer();
    *cont_slice = slice_param;
    cont_slice->set_name("cont_slice");
    cont_slice->add_bottom("cont");
    StoreInFloat(cont_slice);  // cont's readers take it in float

    // W_xh_x = W_xh * x + b_h, all time steps at once.
    {
      caffe::LayerParameter* layer = net_param->add_layer();
      *layer = biased_hidden_param;
      layer->set_name("x_transform");
      layer->add_param()->set_name("W_xh");
      layer->add_param()->set_name("b_h");
      layer->add_bottom("x");
      layer->add_top("W_xh_x");
      layer->add_propagate_down(true);
    }

    if (static_input_) {
      // W_xh_x_static = W_xh_static * x_static, as one time step.
      caffe::LayerParameter* layer = net_param->add_layer();
      *layer = hidden_param;
      layer->mutable_inner_product_param()->set_axis(1);
      layer->set_name("W_xh_x_static");
      layer->add_param()->set_name("W_xh_static");
      layer->add_bottom("x_static");
      layer->add_top("W_xh_x_static_preshape");
      layer->add_propagate_down(true);

      caffe::LayerParameter* reshape = net_param->add_layer();
      reshape->set_type("Reshape");
      caffe::BlobShape* shape = reshape->mutable_reshape_param()->mutable_shape();
      shape->add_dim(1);   // one time step
      shape->add_dim(-1);  // the streams, inferred so the batch may change
      shape->add_dim(num_output());
      reshape->set_name("W_xh_x_static_reshape");
      reshape->add_bottom("W_xh_x_static_preshape");
      reshape->add_top("W_xh_x_static");
    }

    caffe::LayerParameter* x_slice = net_param->add_layer();
    *x_slice = slice_param;
    x_slice->set_name("W_xh_x_slice");
    x_slice->add_bottom("W_xh_x");

    caffe::LayerParameter output_concat;
    output_concat.set_name("o_concat");
    output_concat.set_type("Concat");
    output_concat.add_top("o");
    output_concat.mutable_concat_param()->set_axis(0);

    for (int t = 1; t <= T_; ++t) {
      const std::string tm1s = std::to_string(t - 1);
      const std::string ts = std::to_string(t);
      cont_slice->add_top("cont_" + ts);
      x_slice->add_top("W_xh_x_" + ts);

      // h_conted_{t-1} = cont_t * h_{t-1}: a new sequence forgets the state.
      {
        caffe::LayerParameter* layer = net_param->add_layer();
        *layer = scale_param;
        layer->set_name("h_conted_" + tm1s);
        layer->add_bottom("h_" + tm1s);
        layer->add_bottom("cont_" + ts);
        layer->add_top("h_conted_" + tm1s);
      }
      // W_hh_h_{t-1} = W_hh * h_conted_{t-1}
      {
        caffe::LayerParameter* layer = net_param->add_layer();
        *layer = hidden_param;
        layer->set_name("W_hh_h_" + tm1s);
        layer->add_param()->set_name("W_hh");
        layer->add_bottom("h_conted_" + tm1s);
        layer->add_top("W_hh_h_" + tm1s);
      }
      // h_t = tanh(W_hh_h_{t-1} + W_xh_x_t [+ W_xh_x_static])
      {
        caffe::LayerParameter* layer = net_param->add_layer();
        *layer = sum_param;
        layer->set_name("h_input_sum_" + ts);
        layer->add_bottom("W_hh_h_" + tm1s);
        layer->add_bottom("W_xh_x_" + ts);
        if (static_input_) layer->add_bottom("W_xh_x_static");
        layer->add_top("h_neuron_input_" + ts);
      }
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
        *layer = biased_hidden_param;
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
