#include "dlcaffe/net.hpp"
#include "dlcaffe/net_file_readers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <glog/logging.h>

#include <fstream>
#include <set>
#include <sstream>

#include "dlcaffe/io.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"
#include "dlcaffe/net_hdf5.hpp"
#include "core/execution_plan.hpp"
#include "core/gemm_config.hpp"
#include "core/gemm_tuning.hpp"
#include "core/mean_abs.hpp"
#include "core/memory_plan.hpp"
#include "core/training_memory_plan.hpp"
#include "core/net_description_passes.hpp"

namespace dlcaffe {

namespace {

// Backward reads the diff of each top of a layer it runs. A loss's holds its
// weight (Layer::SetLossWeights), and most are written by the backward of a
// layer that reads the blob; the others (outputs of the net, and blobs
// whose readers all skip backward, as an LSTM's unused final cell state)
// are zero, as in Caffe, unless the caller writes a gradient there
// (pycaffe's net.backward(diffs)).
void ClearUnwrittenTopDiffs(const Net& net) {
  if (net.has_memory_plan()) return;  // no backward, and diffs dropped
  const int n = static_cast<int>(net.layers().size());
  std::set<const Blob*> cleared;
  for (int i = 0; i < n; ++i) {
    if (!net.layer_need_backward()[i]) continue;
    for (size_t t = 0; t < net.top_vecs()[i].size(); ++t) {
      Blob* top = net.top_vecs()[i][t];
      if (net.layers()[i]->loss(static_cast<int>(t)) != 0.f || top->count() == 0) continue;
      bool written = false;
      for (int j = i + 1; j < n && !written; ++j)
        for (size_t b = 0; b < net.bottom_vecs()[j].size() && !written; ++b)
          written = net.bottom_vecs()[j][b] == top && net.layer_need_backward()[j] &&
                    net.bottom_need_backward()[j][b];
      if (!written && cleared.insert(top).second) top->SetDiff(0.f);
    }
  }
}

}  // namespace

Net::Net(const caffe::NetParameter& param, Context& ctx)
    : ctx_(&ctx), options_(ctx.options()) {
  Init(param);
}

Net::~Net() = default;

Net::Net(const std::string& prototxt_path, caffe::Phase phase, Context& ctx, int level,
         const std::vector<std::string>& stages)
    : ctx_(&ctx), options_(ctx.options()) {
  // The file's format is its reader's business (net_file_readers.hpp).
  NetFile file = ReadNetFile(prototxt_path, phase, ctx.options());
  caffe::NetParameter& param = file.param;
  param.mutable_state()->set_phase(phase);
  param.mutable_state()->set_level(level);
  param.mutable_state()->clear_stage();
  for (const auto& s : stages) param.mutable_state()->add_stage(s);
  Init(param);
  if (file.resolver) set_input_shape_resolver(std::move(file.resolver));
}

bool Net::StateMeetsRule(const caffe::NetState& state, const caffe::NetStateRule& rule,
                         const std::string& layer_name) {
  if (rule.has_phase() && rule.phase() != state.phase()) return false;
  if (rule.has_min_level() && state.level() < rule.min_level()) return false;
  if (rule.has_max_level() && state.level() > rule.max_level()) return false;
  for (const auto& stage : rule.stage()) {
    bool found = false;
    for (const auto& s : state.stage()) found |= (s == stage);
    if (!found) return false;
  }
  for (const auto& stage : rule.not_stage()) {
    for (const auto& s : state.stage())
      if (s == stage) return false;
  }
  return true;
}

void Net::FilterNet(const caffe::NetParameter& param, caffe::NetParameter* filtered) {
  const caffe::NetState& state = param.state();
  filtered->CopyFrom(param);
  filtered->clear_layer();
  for (const auto& layer : param.layer()) {
    DLC_REQUIRE(layer.include_size() == 0 || layer.exclude_size() == 0,
                "layer '" << layer.name()
                          << "' has both include and exclude rules; use one of them");
    // No include rules: kept unless an exclude rule matches. Include rules:
    // kept only if one of them matches.
    bool keep = layer.include_size() == 0;
    for (const auto& rule : layer.exclude())
      if (StateMeetsRule(state, rule, layer.name())) keep = false;
    for (const auto& rule : layer.include())
      if (StateMeetsRule(state, rule, layer.name())) keep = true;
    if (keep) filtered->add_layer()->CopyFrom(layer);
  }
}

void Net::Init(const caffe::NetParameter& in_param) {
  caffe::NetParameter upgraded(in_param);
  UpgradeNetAsNeeded("net '" + in_param.name() + "'", &upgraded);
  phase_ = upgraded.state().phase();
  settings_.CopyFrom(upgraded);
  settings_.clear_layer();
  caffe::NetParameter filtered, param;
  FilterNet(upgraded, &filtered);
  if (options_.graph_passes == RunOptions::Choice::kOn) {
    const std::vector<std::string> fused = RunGraphPasses(&filtered, options_.fusion);
    if (!fused.empty())
      LOG(INFO) << "Net '" << filtered.name() << "': the graph passes fused " << fused.size()
                << " subgraphs";
  }
  caffe::NetParameter typed;
  AssignStorageTypes(filtered, *ctx_, &typed);
  InsertSplits(typed, &param);
  name_ = param.name();
  debug_info_ = param.debug_info();

  std::map<std::string, int> available_blobs;  // produced and not yet consumed
  std::map<const Blob*, std::string> unshaped_tops;  // never shaped -> its layer
  const int num_layers = param.layer_size();
  bottom_vecs_.resize(num_layers);
  top_vecs_.resize(num_layers);
  bottom_id_vecs_.resize(num_layers);
  top_id_vecs_.resize(num_layers);
  param_id_vecs_.resize(num_layers);
  bottom_need_backward_.resize(num_layers);
  // Every layer runs under the choices this net's options make on this
  // device (set_options re-decides them).
  const LayerChoices choices = DecideLayerChoices(options_, ctx_->info());

  for (int layer_id = 0; layer_id < num_layers; ++layer_id) {
    caffe::LayerParameter layer_param = param.layer(layer_id);
    if (!layer_param.has_phase()) layer_param.set_phase(phase_);
    DLC_REQUIRE(layer_param.propagate_down_size() == 0 ||
                    layer_param.propagate_down_size() == layer_param.bottom_size(),
                "layer '" << layer_param.name() << "': propagate_down has "
                          << layer_param.propagate_down_size() << " entries for "
                          << layer_param.bottom_size() << " bottoms");
    DLC_REQUIRE(!layer_names_index_.count(layer_param.name()),
                "two layers are named '" << layer_param.name() << "'");
    layers_.push_back(LayerRegistry::Create(layer_param, *ctx_));
    layer_names_.push_back(layer_param.name());
    layer_names_index_[layer_param.name()] = layer_id;

    bool need_backward = false;
    for (int b = 0; b < layer_param.bottom_size(); ++b) {
      const int blob_id = AppendBottom(layer_param, layer_id, b, &available_blobs);
      need_backward |= blob_need_backward_[blob_id];
    }
    // A blob that no layer ever shaped (an Input layer without
    // input_param.shape) holds nothing; a layer set up on it would see a
    // rank-0 blob of no elements, which is not a scalar.
    // Named by the layer that left it so (not by an inserted Split).
    for (int b = 0; b < layer_param.bottom_size(); ++b) {
      const auto unshaped = unshaped_tops.find(bottom_vecs_[layer_id][b]);
      DLC_REQUIRE(unshaped == unshaped_tops.end(),
                  unshaped->second << ": top '" << layer_param.bottom(b)
                                   << "' has no shape, and layer '" << layer_param.name()
                                   << "' uses it (an Input layer needs input_param { shape { "
                                      "dim: ... } } for each of its tops)");
    }
    for (int t = 0; t < layer_param.top_size(); ++t)
      AppendTop(layer_param, layer_id, t, &available_blobs);
    // Layers such as loss layers may add an anonymous top of their own.
    Layer* layer = layers_[layer_id].get();
    if (layer->AutoTopBlobs()) {
      const int needed = std::max(layer->MinTopBlobs(), layer->ExactNumTopBlobs());
      for (int t = layer_param.top_size(); t < needed; ++t) {
        AppendTop(layer_param, layer_id, t, nullptr);
      }
    }

    layer->set_choices(choices);
    try {
      layer->SetUp(bottom_vecs_[layer_id], top_vecs_[layer_id]);
    } catch (const Error& e) {
      std::string what = e.what();
      // A blob too large to hold: say which tops the layer was shaping.
      if (what.find(kBlobTooLarge) != std::string::npos) {
        what += " (top";
        for (int t = 0; t < layer_param.top_size(); ++t)
          what += std::string(t ? ", '" : " '") + layer_param.top(t) + "'";
        what += ")";
      }
      if (what.rfind("layer '", 0) == 0) throw Error(what);
      throw Error("layer '" + layer_param.name() + "' (" + layer_param.type() +
                  "): " + what);
    }
    for (size_t t = 0; t < top_vecs_[layer_id].size(); ++t) {
      const Blob* top = top_vecs_[layer_id][t];
      if (top->shape().empty() && top->count() == 0)
        unshaped_tops[top] = "layer '" + layer_param.name() + "' (" + layer_param.type() + ")";
      const int top_id = top_id_vecs_[layer_id][t];
      if ((int)blob_loss_weights_.size() <= top_id) blob_loss_weights_.resize(top_id + 1, 0.f);
      blob_loss_weights_[top_id] = layer->loss(static_cast<int>(t));
      VLOG(1) << "Top shape: " << top_vecs_[layer_id][t]->shape_string();
    }

    // The layer may have added param specs in SetUp (BatchNorm fixes its
    // statistics' lr_mult to 0, as in Caffe): read its own copy from here on.
    const caffe::LayerParameter& set_up_param = layer->layer_param();
    const int num_params = static_cast<int>(layer->blobs().size());
    DLC_REQUIRE(set_up_param.param_size() <= num_params,
                "layer '" << layer_param.name() << "' has " << num_params
                          << " parameter blob(s) but " << set_up_param.param_size()
                          << " param specs");
    for (int p = 0; p < num_params; ++p) {
      const bool param_need_backward =
          p >= set_up_param.param_size() || set_up_param.param(p).lr_mult() != 0.f;
      need_backward |= param_need_backward;
      layer->set_param_propagate_down(p, param_need_backward);
    }
    for (int p = 0; p < num_params; ++p) AppendParam(set_up_param, layer_id, p);
    layer_need_backward_.push_back(need_backward);
    if (need_backward)
      for (int top_id : top_id_vecs_[layer_id]) blob_need_backward_[top_id] = true;
  }

  // Walk backwards: a layer needs backward only if it contributes to a loss
  // and some blob below it wants gradients.
  std::set<std::string> blobs_under_loss, blobs_skip_backprop;
  for (int layer_id = num_layers - 1; layer_id >= 0; --layer_id) {
    bool contributes_loss = false, skip_propagate_down = true;
    for (size_t t = 0; t < top_vecs_[layer_id].size(); ++t) {
      const std::string& blob_name = blob_names_[top_id_vecs_[layer_id][t]];
      if (layers_[layer_id]->loss(static_cast<int>(t)) != 0.f ||
          blobs_under_loss.count(blob_name))
        contributes_loss = true;
      if (!blobs_skip_backprop.count(blob_name)) skip_propagate_down = false;
      if (contributes_loss && !skip_propagate_down) break;
    }
    if (layer_need_backward_[layer_id] && skip_propagate_down) {
      layer_need_backward_[layer_id] = false;
      for (size_t b = 0; b < bottom_vecs_[layer_id].size(); ++b)
        bottom_need_backward_[layer_id][b] = false;
    }
    if (!contributes_loss) layer_need_backward_[layer_id] = false;
    for (size_t b = 0; b < bottom_vecs_[layer_id].size(); ++b) {
      const std::string& blob_name = blob_names_[bottom_id_vecs_[layer_id][b]];
      if (contributes_loss)
        blobs_under_loss.insert(blob_name);
      else
        bottom_need_backward_[layer_id][b] = false;
      if (!bottom_need_backward_[layer_id][b]) blobs_skip_backprop.insert(blob_name);
    }
  }
  if (param.force_backward()) {
    for (int layer_id = 0; layer_id < num_layers; ++layer_id) {
      layer_need_backward_[layer_id] = true;
      for (size_t b = 0; b < bottom_vecs_[layer_id].size(); ++b) {
        bottom_need_backward_[layer_id][b] =
            bottom_need_backward_[layer_id][b] ||
            layers_[layer_id]->AllowForceBackward(static_cast<int>(b));
        blob_need_backward_[bottom_id_vecs_[layer_id][b]] =
            blob_need_backward_[bottom_id_vecs_[layer_id][b]] ||
            bottom_need_backward_[layer_id][b];
      }
      for (size_t p = 0; p < layers_[layer_id]->blobs().size(); ++p)
        layers_[layer_id]->set_param_propagate_down(static_cast<int>(p), true);
    }
  }
  // What no layer consumed is an output of the net.
  for (const auto& entry : available_blobs) {
    net_output_blobs_.push_back(blobs_[entry.second].get());
    net_output_blob_indices_.push_back(entry.second);
  }
  for (size_t i = 0; i < blob_names_.size(); ++i) blob_names_index_[blob_names_[i]] = (int)i;
  ShareWeights();
  // Weights carried in the description itself (an imported ONNX model, a
  // text net with blobs) are loaded, as Caffe's layers load theirs.
  bool carries_weights = false;
  for (const auto& layer : param.layer()) carries_weights = carries_weights || layer.blobs_size() > 0;
  if (carries_weights) CopyTrainedLayersFrom(param);
  MakePlan();
  ClearUnwrittenTopDiffs(*this);
  LOG(INFO) << "Network '" << name_ << "' initialized: " << num_layers << " layers, "
            << blobs_.size() << " blobs, " << learnable_params_.size()
            << " learnable parameter blobs";
}

void Net::AppendTop(const caffe::LayerParameter& layer_param, int layer_id, int top_id,
                    std::map<std::string, int>* available_blobs) {
  const std::string blob_name =
      top_id < layer_param.top_size() ? layer_param.top(top_id) : "(automatic)";
  // In place: a top with the name of one of this layer's bottoms reuses it.
  if (available_blobs && top_id < layer_param.top_size() &&
      top_id < layer_param.bottom_size() && blob_name == layer_param.bottom(top_id)) {
    const int blob_id = blob_names_index_.at(blob_name);
    top_vecs_[layer_id].push_back(blobs_[blob_id].get());
    top_id_vecs_[layer_id].push_back(blob_id);
    (*available_blobs)[blob_name] = blob_id;
    return;
  }
  if (available_blobs && blob_names_index_.count(blob_name)) {
    // Caffe allows re-producing a name only in place; anything else is a
    // wiring mistake.
    DLC_FAIL("layer '" << layer_param.name() << "': top blob '" << blob_name
                       << "' is produced by more than one layer (only in-place "
                          "layers may reuse a name, as bottom and top at the same index)");
  }
  const int blob_id = static_cast<int>(blobs_.size());
  // A rebuild (net_input_shapes.cpp) keeps the blob object of each name.
  const bool reuse = reused_blobs_ && available_blobs && reused_blobs_->count(blob_name);
  blobs_.push_back(reuse ? reused_blobs_->at(blob_name) : std::make_shared<Blob>(*ctx_));
  blob_names_.push_back(blob_name);
  blob_need_backward_.push_back(false);
  if (available_blobs) {
    blob_names_index_[blob_name] = blob_id;
    (*available_blobs)[blob_name] = blob_id;
  }
  // The layer's storage type (passes/assign_storage_types.cpp) unless the
  // layer keeps this top in float32, else its first bottom's (an inserted
  // Split), else float32.
  StorageType storage = StorageType::kFloat32;
  if (layers_[layer_id]->KeepsTopInFloat(top_id)) {
    storage = StorageType::kFloat32;
  } else if (layer_param.has_forward_type()) {
    // AssignStorageTypes gave it a storage type (or float32).
    if (!StorageTypeOf(layer_param.forward_type(), &storage)) storage = StorageType::kFloat32;
  } else if (!bottom_vecs_[layer_id].empty()) {
    storage = bottom_vecs_[layer_id][0]->storage_type();
  }
  blobs_[blob_id]->set_storage_type(storage);
  top_vecs_[layer_id].push_back(blobs_[blob_id].get());
  top_id_vecs_[layer_id].push_back(blob_id);
  if (layer_param.type() == "Input") {
    net_input_blob_indices_.push_back(blob_id);
    net_input_blobs_.push_back(blobs_[blob_id].get());
  }
}

int Net::AppendBottom(const caffe::LayerParameter& layer_param, int layer_id,
                      int bottom_id, std::map<std::string, int>* available_blobs) {
  const std::string& blob_name = layer_param.bottom(bottom_id);
  auto it = available_blobs->find(blob_name);
  DLC_REQUIRE(it != available_blobs->end(),
              "layer '" << layer_param.name() << "' (" << layer_param.type()
                        << "): unknown bottom blob '" << blob_name
                        << "' (no earlier layer produces it)");
  const int blob_id = it->second;
  bottom_vecs_[layer_id].push_back(blobs_[blob_id].get());
  bottom_id_vecs_[layer_id].push_back(blob_id);
  available_blobs->erase(it);
  bool need_backward = blob_need_backward_[blob_id];
  if (layer_param.propagate_down_size() > 0)
    need_backward = layer_param.propagate_down(bottom_id);
  bottom_need_backward_[layer_id].push_back(need_backward);
  return blob_id;
}

void Net::AppendParam(const caffe::LayerParameter& layer_param, int layer_id,
                      int param_id) {
  const int net_param_id = static_cast<int>(params_.size());
  const std::string param_name =
      param_id < layer_param.param_size() ? layer_param.param(param_id).name() : "";
  params_.push_back(layers_[layer_id]->blobs()[param_id]);
  param_id_vecs_[layer_id].push_back(net_param_id);
  param_layer_indices_.push_back({layer_id, param_id});
  param_display_names_.push_back(param_name.empty() ? std::to_string(param_id) : param_name);
  caffe::ParamSpec default_spec;
  const caffe::ParamSpec& spec =
      param_id < layer_param.param_size() ? layer_param.param(param_id) : default_spec;
  if (param_name.empty() || !param_names_index_.count(param_name)) {
    // This layer owns the parameter.
    if (!param_name.empty()) param_names_index_[param_name] = net_param_id;
    param_owners_.push_back(-1);
    const int learnable_id = static_cast<int>(learnable_params_.size());
    learnable_params_.push_back(params_.back().get());
    learnable_param_ids_.push_back(learnable_id);
    has_params_lr_.push_back(spec.has_lr_mult());
    has_params_decay_.push_back(spec.has_decay_mult());
    params_lr_.push_back(spec.lr_mult());
    params_weight_decay_.push_back(spec.decay_mult());
    return;
  }
  // Shared by name with an earlier layer.
  const int owner_id = param_names_index_[param_name];
  param_owners_.push_back(owner_id);
  const auto owner_index = param_layer_indices_[owner_id];
  const Blob& owner = *layers_[owner_index.first]->blobs()[owner_index.second];
  const Blob& mine = *params_.back();
  if (spec.share_mode() == caffe::ParamSpec_DimCheckMode_PERMISSIVE) {
    DLC_REQUIRE(mine.count() == owner.count(),
                "layer '" << layer_param.name() << "': shared parameter '" << param_name
                          << "' has " << mine.count() << " values, its owner (layer '"
                          << layer_names_[owner_index.first] << "') has "
                          << owner.count());
  } else {
    DLC_REQUIRE(mine.shape() == owner.shape(),
                "layer '" << layer_param.name() << "': shared parameter '" << param_name
                          << "' has shape " << mine.shape_string()
                          << ", its owner (layer '" << layer_names_[owner_index.first]
                          << "') has " << owner.shape_string()
                          << " (share_mode PERMISSIVE compares counts only)");
  }
  const int learnable_id = learnable_param_ids_[owner_id];
  learnable_param_ids_.push_back(learnable_id);
  if (spec.has_lr_mult()) {
    if (has_params_lr_[learnable_id]) {
      DLC_REQUIRE(params_lr_[learnable_id] == spec.lr_mult(),
                  "shared parameter '" << param_name << "' has mismatched lr_mult");
    } else {
      has_params_lr_[learnable_id] = true;
      params_lr_[learnable_id] = spec.lr_mult();
    }
  }
  if (spec.has_decay_mult()) {
    if (has_params_decay_[learnable_id]) {
      DLC_REQUIRE(params_weight_decay_[learnable_id] == spec.decay_mult(),
                  "shared parameter '" << param_name << "' has mismatched decay_mult");
    } else {
      has_params_decay_[learnable_id] = true;
      params_weight_decay_[learnable_id] = spec.decay_mult();
    }
  }
}

void Net::ShareWeights() {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (param_owners_[i] < 0) continue;
    params_[i]->ShareData(*params_[param_owners_[i]]);
    params_[i]->ShareDiff(*params_[param_owners_[i]]);
  }
}

void Net::Reshape() {
  FollowInputShapes();
  ReadBlocks::Pass pass(memory_plan_ ? memory_plan_->read_blocks() : nullptr);
  for (size_t i = 0; i < layers_.size(); ++i)
    layers_[i]->Reshape(bottom_vecs_[i], top_vecs_[i]);
  MakePlan();
  if (memory_plan_) activation_memory_ = memory_plan_->Apply(*this);
  if (training_plan_) diff_memory_ = training_plan_->Apply(*this);
  ClearUnwrittenTopDiffs(*this);
}

ActivationMemory Net::PlanTrainingMemory(const std::vector<std::string>& keep) {
  DLC_REQUIRE(!memory_plan_, "net '" << name_ << "': the training memory plan is for nets "
                                        "that run backward, and this one has the inference "
                                        "memory plan");
  for (const std::string& name : keep)
    DLC_REQUIRE(has_blob(name), "net '" << name_ << "': the training memory plan cannot keep "
                                        "the diff of blob '" << name
                                        << "': the net has no blob of that name");
  training_plan_ = std::make_unique<TrainingMemoryPlan>(keep);
  diff_memory_ = training_plan_->Apply(*this);
  return diff_memory_;
}

ActivationMemory Net::PlanInferenceMemory(const std::vector<std::string>& keep) {
  for (size_t i = 0; i < layers_.size(); ++i)
    DLC_REQUIRE(!layer_need_backward_[i],
                "net '" << name_ << "': the inference memory plan is for nets that never "
                        "run backward, but layer '" << layer_names_[i] << "' ("
                        << layers_[i]->type() << ") needs backward (a loss above it and "
                        "learnable parameters or inputs that take gradients); use a "
                        "deploy net or phase TEST without loss layers");
  for (const std::string& name : keep)
    DLC_REQUIRE(has_blob(name), "net '" << name_ << "': the memory plan cannot keep blob '"
                                        << name << "': the net has no blob of that name");
  if (!memory_plan_) memory_plan_ = std::make_unique<InferenceMemoryPlan>();
  memory_plan_->set_keep(keep);
  Reshape();
  return activation_memory_;
}

void Net::MakePlan() {
  auto plan = std::make_unique<ExecutionPlan>(*this, options_);
  if (plan_) plan->TakeForwardRecord(*plan_);
  plan_ = std::move(plan);
}

const ExecutionPlan& Net::plan() const { return *plan_; }

void Net::set_options(const RunOptions& options) {
  options_ = options;
  // The layers' choices (their kernels and algorithms) follow the options
  // too: reshaping makes each layer take its new ones, and the plan.
  const LayerChoices choices = DecideLayerChoices(options_, ctx_->info());
  bool changed = false;
  for (const auto& layer : layers_) {
    if (layer->choices() == choices) continue;
    layer->set_choices(choices);
    changed = true;
  }
  if (changed) return Reshape();
  MakePlan();
  // Fusion decides which layer's backward reads which diff.
  if (training_plan_) diff_memory_ = training_plan_->Apply(*this);
}

void Net::ForwardFromTo(int start, int end) {
  CHECK_GE(start, 0);
  CHECK_LT(end, (int)layers_.size());
  // A net that follows its input shapes may be rebuilt here with another
  // number of layers (an import fuses at one shape what it cannot at
  // another): a whole pass stays whole; a partial one's indices lose their
  // meaning.
  const int layers_before = static_cast<int>(layers_.size());
  const bool whole = start == 0 && end == layers_before - 1;
  FollowInputShapes();
  if (whole) {
    end = static_cast<int>(layers_.size()) - 1;
  } else {
    DLC_REQUIRE(static_cast<int>(layers_.size()) == layers_before,
                "net '" << name_ << "': ForwardFromTo(" << start << ", " << end
                        << ") at new input shapes, which rebuilt the net with "
                        << layers_.size() << " layers instead of " << layers_before
                        << "; run the whole net (Forward) once at these shapes first");
  }
  if (memory_plan_) {
    const int last = static_cast<int>(layers_.size()) - 1;
    const auto name_of = [&](int i) {
      return i >= 0 && i <= last ? "'" + layer_names_[i] + "'" : std::string("(none)");
    };
    DLC_REQUIRE(start == 0 && end == last,
                "net '" << name_ << "': ForwardFromTo(" << start << ", " << end
                        << ") runs layers " << name_of(start) << " to " << name_of(end)
                        << " only, but under the inference memory plan a partial pass "
                           "may read storage that a later layer overwrote; run the "
                           "whole net (Forward)");
    if (memory_plan_->InputsReshaped(*this)) Reshape();
  }
  ReadBlocks::Pass pass(memory_plan_ ? memory_plan_->read_blocks() : nullptr);
  // Debug output shows each layer's own top, as Caffe's does: no fusion.
  for (const ForwardStep& step : plan_->ForwardPass(*this, start, end, debug_info_)) {
    const int i = step.layer;
    // As Caffe's Layer::Forward: shapes follow the bottoms every pass.
    layers_[i]->Reshape(bottom_vecs_[i], top_vecs_[i]);
    layers_[i]->set_epilogue(plan_->ForwardEpilogue(*this, step));
    // Nothing to compute where every top is empty (sizes that follow the
    // data: a detector's class without boxes).
    const auto& tops = top_vecs_[i];
    const bool empty = !tops.empty() && !layers_[i]->SizesTopsInForward() &&
                       std::all_of(tops.begin(), tops.end(),
                                                    [](const Blob* b) { return b->count() == 0; });
    if (!empty) {
      if (step_products_) {
        GemmRecording recording(*ctx_);
        layers_[i]->Forward(bottom_vecs_[i], top_vecs_[i]);
        for (const GemmArgs& product : recording.products())
          (*step_products_)[i].push_back(DescribeGemm(*ctx_, product));
      } else {
        layers_[i]->Forward(bottom_vecs_[i], top_vecs_[i]);
      }
    }
    if (debug_info_) ForwardDebugInfo(i);
    // The layers it stood for, and a ReLU it clamped for, only take shapes.
    for (int j = i + 1; j < step.next; ++j) layers_[j]->Reshape(bottom_vecs_[j], top_vecs_[j]);
  }
}

float Net::CurrentLoss() const {
  double loss = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (size_t t = 0; t < top_vecs_[i].size(); ++t) {
      const float weight = layers_[i]->loss(static_cast<int>(t));
      if (weight == 0.f) continue;
      for (float v : top_vecs_[i][t]->ReadData()) loss += double(weight) * v;
    }
  }
  return static_cast<float>(loss);
}

float Net::Forward() {
  ForwardNoLoss();
  const float loss = CurrentLoss();
  // The loss read waited for the pass, and so for the layers' records of a
  // bad label or index, read after their kernels: report one now rather
  // than at a next pass that may never come.
  for (const auto& layer : layers_) layer->ThrowLateErrors();
  return loss;
}

void Net::BackwardFromTo(int start, int end) {
  CHECK_GE(end, 0);
  CHECK_LT(start, (int)layers_.size());
  DLC_REQUIRE(!memory_plan_ || start < end,
              "net '" << name_ << "': cannot run backward (from layer '"
                      << layer_names_[start] << "' down to '" << layer_names_[end]
                      << "') under the inference memory plan, which shares activation "
                         "storage and drops diffs; build the net without the plan");
  // A Forward that grew a blob gave it fresh storage of its own.
  if (training_plan_ && training_plan_->BlobsResized(*this))
    diff_memory_ = training_plan_->Apply(*this);
  ReadBlocks::Pass pass(training_plan_ ? training_plan_->read_blocks() : nullptr);
  for (const BackwardStep& step : plan_->BackwardPass(*this, start, end)) {
    const int i = step.layer;
    if (step.runs) {
      LayerEpilogue epilogue = layers_[i]->epilogue();  // as the last forward set it
      epilogue.relu_diff_mask = step.relu_diff_mask;
      layers_[i]->set_epilogue(epilogue);
      layers_[i]->Backward(top_vecs_[i], bottom_need_backward_[i], bottom_vecs_[i]);
      if (debug_info_) BackwardDebugInfo(i);
    }
    if (after_backward_) after_backward_(i);
  }
}

void Net::ForwardDebugInfo(int layer_id) const {
  for (size_t t = 0; t < top_vecs_[layer_id].size(); ++t)
    LOG(INFO) << "    [Forward] Layer " << layer_names_[layer_id] << ", top blob "
              << blob_names_[top_id_vecs_[layer_id][t]]
              << " data: " << MeanAbs(*top_vecs_[layer_id][t], false);
  for (size_t p = 0; p < layers_[layer_id]->blobs().size(); ++p)
    LOG(INFO) << "    [Forward] Layer " << layer_names_[layer_id] << ", param blob "
              << param_display_names_[param_id_vecs_[layer_id][p]]
              << " data: " << MeanAbs(*layers_[layer_id]->blobs()[p], false);
}

void Net::BackwardDebugInfo(int layer_id) const {
  for (size_t b = 0; b < bottom_vecs_[layer_id].size(); ++b) {
    if (!bottom_need_backward_[layer_id][b]) continue;
    LOG(INFO) << "    [Backward] Layer " << layer_names_[layer_id] << ", bottom blob "
              << blob_names_[bottom_id_vecs_[layer_id][b]]
              << " diff: " << MeanAbs(*bottom_vecs_[layer_id][b], true);
  }
  for (size_t p = 0; p < layers_[layer_id]->blobs().size(); ++p) {
    if (!layers_[layer_id]->param_propagate_down(static_cast<int>(p))) continue;
    LOG(INFO) << "    [Backward] Layer " << layer_names_[layer_id] << ", param blob " << p
              << " diff: " << MeanAbs(*layers_[layer_id]->blobs()[p], true);
  }
}

void Net::UpdateDebugInfo(int param_id) const {
  const Blob& blob = *params_[param_id];
  const std::string& layer_name = layer_names_[param_layer_indices_[param_id].first];
  const int owner = param_owners_[param_id];
  if (owner < 0) {
    LOG(INFO) << "    [Update] Layer " << layer_name << ", param "
              << param_display_names_[param_id] << " data: " << MeanAbs(blob, false)
              << "; diff: " << MeanAbs(blob, true);
  } else {
    LOG(INFO) << "    [Update] Layer " << layer_name << ", param blob "
              << param_display_names_[param_id] << " (owned by layer "
              << layer_names_[param_layer_indices_[owner].first] << ", param "
              << param_display_names_[owner] << ")"
              << " diff: " << MeanAbs(blob, true);
  }
}

void Net::Backward() { BackwardFromTo(static_cast<int>(layers_.size()) - 1, 0); }

void Net::SetLossGradientScale(float scale) {
  for (size_t i = 0; i < layers_.size(); ++i)
    for (size_t t = 0; t < top_vecs_[i].size(); ++t) {
      const float weight = layers_[i]->loss(static_cast<int>(t));
      if (weight != 0.f) top_vecs_[i][t]->SetDiff(weight * scale);
    }
}

void Net::ClearParamDiffs() {
  std::vector<cl_mem> diffs;
  std::vector<int> counts;
  for (Blob* blob : learnable_params_) {
    if (blob->count() == 0) continue;
    diffs.push_back(blob->diff());
    counts.push_back(blob->count());
  }
  SetFloatsOfMany(*ctx_, diffs, counts, 0.f);
}

void Net::ShareTrainedLayersWith(const Net& other) {
  for (size_t i = 0; i < other.layers_.size(); ++i) {
    const std::string& name = other.layer_names_[i];
    if (!has_layer(name)) continue;
    Layer* target = layer_by_name(name);
    auto& source_blobs = other.layers_[i]->blobs();
    DLC_REQUIRE(target->blobs().size() == source_blobs.size(),
                "layer '" << name << "': " << target->blobs().size()
                          << " parameter blobs here, " << source_blobs.size()
                          << " in the net it shares weights with");
    for (size_t j = 0; j < source_blobs.size(); ++j) {
      Blob& dst = *target->blobs()[j];
      DLC_REQUIRE(dst.shape() == source_blobs[j]->shape(),
                  "layer '" << name << "', parameter " << j << ": shape "
                            << dst.shape_string() << " here, "
                            << source_blobs[j]->shape_string() << " in the shared net");
      dst.ShareData(*source_blobs[j]);
    }
  }
}

void Net::CopyTrainedLayersFrom(const caffe::NetParameter& in_param) {
  // Legacy (V0/V1) weights are upgraded here when the caller has not already.
  caffe::NetParameter upgraded;
  const bool legacy = NetNeedsV0ToV1Upgrade(in_param) || NetNeedsV1ToV2Upgrade(in_param);
  if (legacy) {
    upgraded = in_param;
    UpgradeNetAsNeeded("weights '" + in_param.name() + "'", &upgraded);
  }
  const caffe::NetParameter& param = legacy ? upgraded : in_param;
  for (const auto& source : param.layer()) {
    if (!has_layer(source.name())) {
      VLOG(1) << "Ignoring source layer " << source.name();
      continue;
    }
    Layer* target = layer_by_name(source.name());
    auto& blobs = target->blobs();
    DLC_REQUIRE((int)blobs.size() == source.blobs_size(),
                "incompatible number of blobs for layer '" << source.name() << "': "
                    << source.blobs_size() << " in the weights, " << blobs.size()
                    << " in the net");
    for (int j = 0; j < source.blobs_size(); ++j) {
      if (!blobs[j]->ShapeEquals(source.blobs(j))) {
        Blob source_shape(*ctx_);
        std::ostringstream given;
        const auto& proto = source.blobs(j);
        if (proto.has_num() || proto.has_channels() || proto.has_height() || proto.has_width())
          given << proto.num() << " " << proto.channels() << " " << proto.height() << " "
                << proto.width();
        else
          for (auto d : proto.shape().dim()) given << d << " ";
        DLC_FAIL("cannot copy param " << j << " weights from layer '" << source.name()
                                      << "': shape mismatch; the weights have shape "
                                      << given.str() << ", the net "
                                      << blobs[j]->shape_string());
      }
      try {
        blobs[j]->FromProto(source.blobs(j), false);
      } catch (const Error& e) {
        DLC_FAIL("cannot copy param " << j << " weights from layer '" << source.name()
                                      << "': " << e.what());
      }
    }
  }
}

namespace {

// A .caffemodel is binary; a text NetParameter has no control characters
// besides white space (and so is read as text only if it looks like text).
bool LooksLikeText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char c;
  for (int i = 0; i < 4096 && in.get(c); ++i) {
    const unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t' && u != '\n' && u != '\r') || u == 0x7f) return false;
  }
  return true;
}

}  // namespace

void Net::CopyTrainedLayersFrom(const std::string& path) {
  // Caffe's HDF5 weights (.caffemodel.h5), told by their signature rather
  // than their name.
  if (IsHdf5File(path)) {
    LoadNetHdf5(*this, path);
    return;
  }
  caffe::NetParameter param;
  // .caffemodel files are binary; accept a text NetParameter too.
  try {
    ReadProtoFromBinaryFile(path, &param);
  } catch (const Error&) {
    if (!FileExists(path) || !LooksLikeText(path)) throw;
    param.Clear();
    ReadProtoFromTextFile(path, &param);
  }
  UpgradeNetAsNeeded(path, &param);
  // Weights that fit no layer of this net are a mistake (the net's
  // description instead of its .caffemodel, or the weights of another net),
  // which Caffe would let pass silently.
  std::vector<std::string> with_weights;
  bool any_match = false;
  for (const auto& layer : param.layer()) {
    if (layer.blobs_size() == 0) continue;
    with_weights.push_back(layer.name());
    any_match = any_match || has_layer(layer.name());
  }
  std::string mine;
  for (size_t i = 0; i < layers_.size(); ++i)
    if (!layers_[i]->blobs().empty()) mine += (mine.empty() ? "'" : ", '") + layer_names_[i] + "'";
  DLC_REQUIRE(!with_weights.empty(),
              path << " holds no weights (no layer has blobs): is it a net description "
                      "instead of the .caffemodel written by training?");
  if (!any_match) {
    std::string theirs;
    for (size_t i = 0; i < with_weights.size() && i < 10; ++i)
      theirs += (i ? ", '" : "'") + with_weights[i] + "'";
    if (with_weights.size() > 10) theirs += ", ...";
    DLC_FAIL(path << ": none of its layers with weights (" << theirs
                  << ") is a layer of net '" << name_ << "' (layers with parameters: "
                  << (mine.empty() ? "none" : mine)
                  << "): the weights belong to another net, or its layers were renamed");
  }
  try {
    CopyTrainedLayersFrom(param);
  } catch (const Error& e) {
    DLC_FAIL(path << ": " << e.what());
  }
}

void Net::ToProto(caffe::NetParameter* param, bool write_diff) const {
  param->Clear();
  param->set_name(name_);
  for (size_t i = 0; i < layers_.size(); ++i) {
    caffe::LayerParameter* layer_param = param->add_layer();
    layer_param->CopyFrom(layers_[i]->layer_param());
    layer_param->clear_blobs();
    for (const auto& blob : layers_[i]->blobs())
      blob->ToProto(layer_param->add_blobs(), write_diff);
  }
}

std::shared_ptr<Blob> Net::blob_by_name(const std::string& name) const {
  auto it = blob_names_index_.find(name);
  DLC_REQUIRE(it != blob_names_index_.end(), "net '" << name_ << "' has no blob '" << name << "'");
  return blobs_[it->second];
}

Layer* Net::layer_by_name(const std::string& name) const {
  auto it = layer_names_index_.find(name);
  DLC_REQUIRE(it != layer_names_index_.end(), "net '" << name_ << "' has no layer '" << name << "'");
  return layers_[it->second].get();
}

}  // namespace dlcaffe
