#include "core/recurrent_layer.hpp"

#include <glog/logging.h>

#include "core/blob_copy.hpp"
#include "core/mean_abs.hpp"

namespace dlcaffe {

void RecurrentLayer::StoreInFloat(caffe::LayerParameter* layer) {
  layer->set_forward_type(caffe::FLOAT);
  layer->set_backward_type(caffe::FLOAT);
}

RecurrentLayer::UnrollTemplates RecurrentLayer::Templates(int width) const {
  const caffe::RecurrentParameter& rp = param_.recurrent_param();
  UnrollTemplates t;
  t.hidden.set_type("InnerProduct");
  t.hidden.mutable_inner_product_param()->set_num_output(width);
  t.hidden.mutable_inner_product_param()->set_bias_term(false);
  t.hidden.mutable_inner_product_param()->set_axis(2);
  *t.hidden.mutable_inner_product_param()->mutable_weight_filler() = rp.weight_filler();
  t.biased_hidden = t.hidden;
  t.biased_hidden.mutable_inner_product_param()->set_bias_term(true);
  *t.biased_hidden.mutable_inner_product_param()->mutable_bias_filler() = rp.bias_filler();
  t.sum.set_type("Eltwise");
  t.sum.mutable_eltwise_param()->set_operation(caffe::EltwiseParameter_EltwiseOp_SUM);
  t.scale.set_type("Scale");
  t.scale.mutable_scale_param()->set_axis(0);
  t.slice.set_type("Slice");
  t.slice.mutable_slice_param()->set_axis(0);
  return t;
}

RecurrentLayer::UnrollStart RecurrentLayer::AddUnrollStart(
    caffe::NetParameter* net, const UnrollTemplates& templates,
    const std::vector<std::string>& states, const std::string& x_weight, const std::string& bias, const std::string& x_static_weight,
    int width) const {
  caffe::LayerParameter* input_layer = net->add_layer();
  input_layer->set_name("recurrent_input");
  input_layer->set_type("Input");
  const std::vector<caffe::BlobShape> shapes = RecurrentInputShapes();
  for (size_t k = 0; k < states.size(); ++k) {
    input_layer->add_top(states[k]);
    *input_layer->mutable_input_param()->add_shape() = shapes[k];
  }

  UnrollStart start;
  start.cont_slice = net->add_layer();
  *start.cont_slice = templates.slice;
  start.cont_slice->set_name("cont_slice");
  start.cont_slice->add_bottom("cont");
  StoreInFloat(start.cont_slice);  // cont's readers take it in float

  const std::string x_product = x_weight + "_x";
  // x_product = x_weight * x + bias, all time steps at once.
  {
    caffe::LayerParameter* layer = net->add_layer();
    *layer = templates.biased_hidden;
    layer->set_name("x_transform");
    layer->add_param()->set_name(x_weight);
    layer->add_param()->set_name(bias);
    layer->add_bottom("x");
    layer->add_top(x_product);
    layer->add_propagate_down(true);
  }
  if (static_input_) {
    // x_product_static = x_static_weight * x_static, as one time step.
    caffe::LayerParameter* layer = net->add_layer();
    *layer = templates.hidden;
    layer->mutable_inner_product_param()->set_axis(1);
    layer->set_name(x_product + "_static");
    layer->add_param()->set_name(x_static_weight);
    layer->add_bottom("x_static");
    layer->add_top(x_product + "_static_preshape");
    layer->add_propagate_down(true);

    caffe::LayerParameter* reshape = net->add_layer();
    reshape->set_type("Reshape");
    caffe::BlobShape* shape = reshape->mutable_reshape_param()->mutable_shape();
    shape->add_dim(1);   // one time step
    shape->add_dim(-1);  // the streams, inferred so the batch may change
    shape->add_dim(width);
    reshape->set_name(x_product + "_static_reshape");
    reshape->add_bottom(x_product + "_static_preshape");
    reshape->add_top(x_product + "_static");
  }

  start.x_slice = net->add_layer();
  *start.x_slice = templates.slice;
  start.x_slice->set_name(x_product + "_slice");
  start.x_slice->add_bottom(x_product);
  return start;
}

void RecurrentLayer::AddStepInput(caffe::NetParameter* net, const UnrollTemplates& templates,
                                  int t, const std::string& transform,
                                  const std::string& h_weight, const std::string& x_weight,
                                  const std::string& sum, const std::string& sum_top) const {
  const std::string tm1s = std::to_string(t - 1), ts = std::to_string(t);
  const std::string h_product = h_weight + "_h_" + tm1s;
  // h_conted_{t-1} = cont_t * h_{t-1}: a new sequence forgets the state.
  {
    caffe::LayerParameter* layer = net->add_layer();
    *layer = templates.scale;
    layer->set_name("h_conted_" + tm1s);
    layer->add_bottom("h_" + tm1s);
    layer->add_bottom("cont_" + ts);
    layer->add_top("h_conted_" + tm1s);
  }
  // h_product = h_weight * h_conted_{t-1}
  {
    caffe::LayerParameter* layer = net->add_layer();
    *layer = templates.hidden;
    layer->set_name(transform);
    layer->add_param()->set_name(h_weight);
    layer->add_bottom("h_conted_" + tm1s);
    layer->add_top(h_product);
  }
  // sum = h_product + x_weight_x_t [+ x_weight_x_static]
  {
    caffe::LayerParameter* layer = net->add_layer();
    *layer = templates.sum;
    layer->set_name(sum);
    layer->add_bottom(h_product);
    layer->add_bottom(x_weight + "_x_" + ts);
    if (static_input_) layer->add_bottom(x_weight + "_x_static");
    layer->add_top(sum_top);
  }
}

caffe::LayerParameter RecurrentLayer::OutputConcat(const std::string& name,
                                                   const std::string& top) {
  caffe::LayerParameter concat;
  concat.set_name(name);
  concat.set_type("Concat");
  concat.add_top(top);
  concat.mutable_concat_param()->set_axis(0);
  return concat;
}

int RecurrentLayer::MinBottomBlobs() const {
  int min_bottoms = 2;
  if (param_.recurrent_param().expose_hidden())
    min_bottoms += static_cast<int>(RecurrentInputBlobNames().size());
  return min_bottoms;
}

int RecurrentLayer::ExactNumTopBlobs() const {
  int num_tops = static_cast<int>(OutputBlobNames().size());
  if (param_.recurrent_param().expose_hidden())
    num_tops += static_cast<int>(RecurrentOutputBlobNames().size());
  return num_tops;
}

void RecurrentLayer::LayerSetUp(const std::vector<Blob*>& bottom,
                                const std::vector<Blob*>& top) {
  const Blob& x = *bottom[0];
  const Blob& cont = *bottom[1];
  DLC_REQUIRE(x.num_axes() >= 2, Where() << "bottom[0] (x) must have at least 2 axes "
                                            "(time steps x streams x ...), got "
                                         << x.shape_string());
  T_ = x.shape(0);
  N_ = x.shape(1);
  DLC_REQUIRE(cont.num_axes() == 2 && cont.shape(0) == T_ && cont.shape(1) == N_,
              Where() << "bottom[1] (cont) must be time steps x streams = " << T_ << " x "
                      << N_ << " like x " << x.shape_string() << ", got "
                      << cont.shape_string());
  DLC_REQUIRE(num_output() > 0, Where() << "recurrent_param.num_output must be positive");
  expose_hidden_ = param_.recurrent_param().expose_hidden();

  const std::vector<std::string> output_names = OutputBlobNames();
  const std::vector<std::string> recur_input_names = RecurrentInputBlobNames();
  const std::vector<std::string> recur_output_names = RecurrentOutputBlobNames();
  CHECK_EQ(recur_input_names.size(), recur_output_names.size());
  const int num_recur_blobs = static_cast<int>(recur_input_names.size());
  const int num_hidden_exposed = expose_hidden_ ? num_recur_blobs : 0;

  // The bottom after x and cont, when there is one more than the exposed
  // states need, is the static input.
  static_input_ = static_cast<int>(bottom.size()) > 2 + num_hidden_exposed;
  if (static_input_) {
    DLC_REQUIRE(bottom[2]->num_axes() >= 1 && bottom[2]->shape(0) == N_,
                Where() << "bottom[2] (x_static) must have the " << N_
                        << " streams as its first axis, got " << bottom[2]->shape_string());
  }

  // The unrolled net stores x's type (the net's pass gave this layer's
  // blobs its forward_type) and takes this layer's math: its pass copies the
  // defaults into every layer.
  const StorageType storage = x.storage_type();
  DLC_REQUIRE(cont.storage_type() == StorageType::kFloat32,
              Where() << "bottom[1] (cont) must be stored in float32, got "
                      << StorageTypeName(cont.storage_type()));
  for (size_t i = 2; i < bottom.size(); ++i)
    DLC_REQUIRE(bottom[i]->storage_type() == storage,
                Where() << "bottom[" << i << "] must be stored as x is ("
                        << StorageTypeName(storage) << "), got "
                        << StorageTypeName(bottom[i]->storage_type()));
  for (size_t i = 0; i < top.size(); ++i)
    DLC_REQUIRE(top[i]->storage_type() == storage,
                Where() << "top[" << i << "] must be stored as x is ("
                        << StorageTypeName(storage) << "), got "
                        << StorageTypeName(top[i]->storage_type()));
  caffe::NetParameter net_param;
  net_param.set_name(name() + "_unrolled");
  net_param.mutable_state()->set_phase(param_.phase());
  net_param.set_default_forward_type(CaffeTypeOf(storage));
  net_param.set_default_backward_type(CaffeTypeOf(storage));
  if (param_.has_forward_math()) net_param.set_default_forward_math(param_.forward_math());
  if (param_.has_backward_math()) net_param.set_default_backward_math(param_.backward_math());

  // The inputs every recurrent architecture shares; cont on its own, in
  // float32.
  caffe::LayerParameter* input_layer = net_param.add_layer();
  input_layer->set_name("input");
  input_layer->set_type("Input");
  auto add_input = [](caffe::LayerParameter* layer, const std::string& name, const Blob& blob) {
    layer->add_top(name);
    caffe::BlobShape* shape = layer->mutable_input_param()->add_shape();
    for (int d : blob.shape()) shape->add_dim(d);
  };
  add_input(input_layer, "x", x);
  if (static_input_) add_input(input_layer, "x_static", *bottom[2]);
  caffe::LayerParameter* cont_input_layer = net_param.add_layer();
  cont_input_layer->set_name("cont_input");
  cont_input_layer->set_type("Input");
  StoreInFloat(cont_input_layer);
  add_input(cont_input_layer, "cont", cont);

  FillUnrolledNet(&net_param);

  // Layer names carry this layer's name, as in Caffe.
  if (!name().empty()) {
    for (int i = 0; i < net_param.layer_size(); ++i) {
      caffe::LayerParameter* layer = net_param.mutable_layer(i);
      layer->set_name(name() + "_" + layer->name());
    }
  }

  // "Pseudo-losses" on the outputs (and, with expose_hidden, on the final
  // states) make the net compute their gradients. They never run: the tops'
  // diffs are the gradients. Unlike force_backward, they spare the inputs
  // that need none (cont). The exposed initial states, though, come from an
  // Input layer that no gradient reaches unless backward is forced, so then
  // it is (cont's gradient then lands in the net's own cont diff, unread).
  if (expose_hidden_) net_param.set_force_backward(true);
  std::vector<std::string> pseudo_loss_inputs = output_names;
  if (expose_hidden_)
    pseudo_loss_inputs.insert(pseudo_loss_inputs.end(), recur_output_names.begin(),
                              recur_output_names.end());
  std::vector<std::string> pseudo_losses;
  for (const std::string& input : pseudo_loss_inputs) {
    caffe::LayerParameter* layer = net_param.add_layer();
    pseudo_losses.push_back(input + "_pseudoloss");
    layer->set_name(pseudo_losses.back());
    layer->set_type("Reduce");  // in any storage type (Reduction is float32 only)
    layer->add_bottom(input);
    layer->add_top(pseudo_losses.back());
    layer->add_loss_weight(1.f);
  }

  try {
    unrolled_net_ = std::make_unique<Net>(net_param, *ctx_);
  } catch (const Error& e) {
    throw Error(Where() + "in the unrolled net: " + e.what());
  }

  x_input_blob_ = unrolled_net_->blob_by_name("x").get();
  cont_input_blob_ = unrolled_net_->blob_by_name("cont").get();
  if (static_input_) x_static_input_blob_ = unrolled_net_->blob_by_name("x_static").get();
  recur_input_blobs_.clear();
  recur_output_blobs_.clear();
  for (int i = 0; i < num_recur_blobs; ++i) {
    recur_input_blobs_.push_back(unrolled_net_->blob_by_name(recur_input_names[i]).get());
    recur_output_blobs_.push_back(unrolled_net_->blob_by_name(recur_output_names[i]).get());
  }
  output_blobs_.clear();
  for (const std::string& output : output_names)
    output_blobs_.push_back(unrolled_net_->blob_by_name(output).get());
  CHECK_EQ(static_cast<int>(unrolled_net_->input_blobs().size()),
           2 + num_recur_blobs + (static_input_ ? 1 : 0));

  // This layer's parameters: those the unrolled net's layers own; the other
  // time steps share them by name.
  blobs_.clear();
  for (size_t i = 0; i < unrolled_net_->params().size(); ++i) {
    if (unrolled_net_->param_owners()[i] < 0) {
      VLOG(1) << Where() << "parameter " << blobs_.size() << ": "
              << unrolled_net_->param_display_names()[i];
      blobs_.push_back(unrolled_net_->params()[i]);
    }
  }
  for (const auto& layer : unrolled_net_->layers())
    for (size_t j = 0; j < layer->blobs().size(); ++j)
      CHECK(layer->param_propagate_down(static_cast<int>(j)))
          << "param_propagate_down not set for " << layer->name() << ", param " << j;
  param_propagate_down_.assign(blobs_.size(), true);

  const std::vector<std::string>& layer_names = unrolled_net_->layer_names();
  last_layer_index_ =
      static_cast<int>(layer_names.size()) - 1 - static_cast<int>(pseudo_losses.size());
  for (size_t j = 0; j < pseudo_losses.size(); ++j)
    CHECK_EQ(layer_names[last_layer_index_ + 1 + j], pseudo_losses[j]);

  // A final state's gradient enters through its pseudo-loss's bottom: the
  // state itself, or the Split top that the net inserted where the state
  // also feeds the output; backward then adds it to the state's gradient.
  recur_output_grad_blobs_.clear();
  if (expose_hidden_) {
    const int first = last_layer_index_ + 1 + static_cast<int>(output_names.size());
    for (int j = 0; j < num_recur_blobs; ++j)
      recur_output_grad_blobs_.push_back(unrolled_net_->bottom_vecs()[first + j][0]);
  }
}

void RecurrentLayer::Reshape(const std::vector<Blob*>& bottom,
                             const std::vector<Blob*>& top) {
  const Blob& x = *bottom[0];
  const Blob& cont = *bottom[1];
  DLC_REQUIRE(x.num_axes() >= 2, Where() << "bottom[0] (x) must have at least 2 axes "
                                            "(time steps x streams x ...), got "
                                         << x.shape_string());
  DLC_REQUIRE(x.shape(0) == T_, Where() << "the number of time steps changed from " << T_
                                        << " to " << x.shape(0) << " (x "
                                        << x.shape_string()
                                        << "); the layer is unrolled for a fixed number");
  N_ = x.shape(1);
  DLC_REQUIRE(cont.num_axes() == 2 && cont.shape(0) == T_ && cont.shape(1) == N_,
              Where() << "bottom[1] (cont) must be time steps x streams = " << T_ << " x "
                      << N_ << " like x " << x.shape_string() << ", got "
                      << cont.shape_string());
  x_input_blob_->ReshapeLike(x);
  cont_input_blob_->ReshapeLike(cont);
  if (static_input_) {
    DLC_REQUIRE(bottom[2]->num_axes() >= 1 && bottom[2]->shape(0) == N_,
                Where() << "bottom[2] (x_static) must have the " << N_
                        << " streams as its first axis, got " << bottom[2]->shape_string());
    x_static_input_blob_->ReshapeLike(*bottom[2]);
  }
  const std::vector<caffe::BlobShape> recur_input_shapes = RecurrentInputShapes();
  CHECK_EQ(recur_input_shapes.size(), recur_input_blobs_.size());
  for (size_t i = 0; i < recur_input_shapes.size(); ++i)
    recur_input_blobs_[i]->Reshape(recur_input_shapes[i]);
  // The unrolled net's layers run as this layer does: under the choices the
  // plan made for it, not those of the unrolled net's options (the context's).
  for (const auto& layer : unrolled_net_->layers()) layer->set_choices(choices_);
  try {
    unrolled_net_->Reshape();
  } catch (const Error& e) {
    throw Error(Where() + "in the unrolled net: " + e.what());
  }
  // Forward starts from the state the previous pass ended with: none yet
  // for these streams, so zeros (cont = 0 multiplies it, but 0 * NaN is not
  // 0: the state must be written).
  if (!expose_hidden_ && state_streams_ != N_) {
    for (Blob* state : recur_output_blobs_) state->SetData(0.f);
    state_streams_ = N_;
  }

  x_input_blob_->ShareData(x);
  x_input_blob_->ShareDiff(x);
  cont_input_blob_->ShareData(cont);
  if (static_input_) {
    x_static_input_blob_->ShareData(*bottom[2]);
    x_static_input_blob_->ShareDiff(*bottom[2]);
  }
  if (expose_hidden_) {
    const int offset = 2 + (static_input_ ? 1 : 0);
    for (size_t j = 0; j < recur_input_blobs_.size(); ++j) {
      const Blob& state = *bottom[offset + j];
      DLC_REQUIRE(state.shape() == recur_input_blobs_[j]->shape(),
                  Where() << "bottom[" << offset + j << "] (initial state "
                          << RecurrentInputBlobNames()[j] << ") must have shape "
                          << recur_input_blobs_[j]->shape_string() << ", got "
                          << state.shape_string());
      recur_input_blobs_[j]->ShareData(state);
      recur_input_blobs_[j]->ShareDiff(state);
    }
  }
  for (size_t i = 0; i < output_blobs_.size(); ++i) {
    top[i]->ReshapeLike(*output_blobs_[i]);
    top[i]->ShareData(*output_blobs_[i]);
    top[i]->ShareDiff(*output_blobs_[i]);
  }
  if (expose_hidden_) {
    for (size_t j = 0; j < recur_output_blobs_.size(); ++j) {
      Blob* state = top[output_blobs_.size() + j];
      state->ReshapeLike(*recur_output_blobs_[j]);
      state->ShareData(*recur_output_blobs_[j]);
      state->ShareDiff(*recur_output_grad_blobs_[j]);
    }
  }
}

void RecurrentLayer::ReshareParameters() { unrolled_net_->ShareWeights(); }

void RecurrentLayer::Forward(const std::vector<Blob*>& bottom,
                             const std::vector<Blob*>& top) {
  ReshareParameters();
  if (!expose_hidden_) {
    // The state after the last step of the previous pass starts this one.
    for (size_t i = 0; i < recur_input_blobs_.size(); ++i) {
      CHECK_EQ(recur_input_blobs_[i]->count(), recur_output_blobs_[i]->count());
      CopyBlobValues(*ctx_, *recur_input_blobs_[i], recur_output_blobs_[i]->data(),
                     recur_input_blobs_[i]->data());
    }
  }
  if (param_.recurrent_param().debug_info())
    ForwardWithDebugInfo();
  else
    unrolled_net_->ForwardFromTo(0, last_layer_index_);
  if (expose_hidden_) {
    for (size_t j = 0; j < recur_output_blobs_.size(); ++j)
      top[output_blobs_.size() + j]->ShareData(*recur_output_blobs_[j]);
  }
}

void RecurrentLayer::Backward(const std::vector<Blob*>& top,
                              const std::vector<bool>& propagate_down,
                              const std::vector<Blob*>& bottom) {
  DLC_REQUIRE(!propagate_down[1],
              Where() << "cannot backpropagate to the sequence continuation indicators "
                         "(bottom[1], cont)");
  // The unrolled net writes the gradients of x, x_static and the exposed
  // initial states straight into the bottoms' diffs (they share storage),
  // and accumulates into the shared parameters' diffs.
  if (param_.recurrent_param().debug_info())
    BackwardWithDebugInfo();
  else
    unrolled_net_->BackwardFromTo(last_layer_index_, 0);
}

void RecurrentLayer::ForwardWithDebugInfo() {
  const Net& net = *unrolled_net_;
  for (int i = 0; i <= last_layer_index_; ++i) {
    unrolled_net_->ForwardFromTo(i, i);
    for (size_t t = 0; t < net.top_vecs()[i].size(); ++t)
      LOG(INFO) << "    [Forward] Layer " << net.layer_names()[i] << ", top blob "
                << net.blob_names()[net.top_ids()[i][t]]
                << " data: " << MeanAbs(*net.top_vecs()[i][t], false);
    const auto& params = net.layers()[i]->blobs();
    for (size_t p = 0; p < params.size(); ++p)
      LOG(INFO) << "    [Forward] Layer " << net.layer_names()[i] << ", param blob " << p
                << " data: " << MeanAbs(*params[p], false);
  }
}

void RecurrentLayer::BackwardWithDebugInfo() {
  const Net& net = *unrolled_net_;
  for (int i = last_layer_index_; i >= 0; --i) {
    unrolled_net_->BackwardFromTo(i, i);
    if (!net.layer_need_backward()[i]) continue;
    for (size_t b = 0; b < net.bottom_vecs()[i].size(); ++b) {
      if (!net.bottom_need_backward()[i][b]) continue;
      LOG(INFO) << "    [Backward] Layer " << net.layer_names()[i] << ", bottom blob "
                << net.blob_names()[net.bottom_ids()[i][b]]
                << " diff: " << MeanAbs(*net.bottom_vecs()[i][b], true);
    }
    const auto& params = net.layers()[i]->blobs();
    for (size_t p = 0; p < params.size(); ++p)
      LOG(INFO) << "    [Backward] Layer " << net.layer_names()[i] << ", param blob " << p
                << " diff: " << MeanAbs(*params[p], true);
  }
}

}  // namespace dlcaffe
