// Nets that follow their input shapes (Net::set_input_shape_resolver): when
// an input blob is reshaped, the description for the new shapes (an ONNX
// model imported again) replaces the net, in place, keeping what the caller
// and the training hold: blobs of the same names (inputs with their values),
// the storage of every learnable parameter, and fixed blobs whose values the
// new description does not change (trained BatchNorm statistics).
#include <glog/logging.h>

#include <sstream>
#include <string_view>

#include "dlcaffe/net.hpp"
#include "core/execution_plan.hpp"  // complete types for the move
#include "core/memory_plan.hpp"
#include "core/training_memory_plan.hpp"

namespace dlcaffe {

namespace {

// A hash of a blob's shape and values (float bits), from the device or from
// a description.
size_t ValueHash(const std::vector<int>& shape, const float* values, size_t count) {
  const std::hash<std::string_view> hash;
  const size_t of_shape = hash({reinterpret_cast<const char*>(shape.data()), shape.size() * sizeof(int)});
  const size_t of_values = hash({reinterpret_cast<const char*>(values), count * sizeof(float)});
  return of_shape ^ (of_values + 0x9e3779b97f4a7c15ull + (of_shape << 6) + (of_shape >> 2));
}

std::string ShapesString(const Net::InputShapes& shapes) {
  std::ostringstream out;
  bool first = true;
  for (const auto& [name, shape] : shapes) {
    out << (first ? "" : ", ") << "'" << name << "' ";
    for (size_t d = 0; d < shape.size(); ++d) out << (d ? "x" : "") << shape[d];
    first = false;
  }
  return out.str();
}

bool IsFixed(const Layer& layer, int blob_index) {
  const caffe::LayerParameter& p = layer.layer_param();
  return blob_index < p.param_size() && p.param(blob_index).lr_mult() == 0.f;
}

}  // namespace

Net::Net(const caffe::NetParameter& param, Context& ctx, const BlobsByName& reused,
         const RunOptions& options)
    : ctx_(&ctx), options_(options), reused_blobs_(&reused) {
  Init(param);
  reused_blobs_ = nullptr;
}

Net& Net::operator=(Net&& other) noexcept = default;

void Net::set_input_shape_resolver(InputShapeResolver resolver, bool decodes_positions) {
  input_shape_resolver_ = std::move(resolver);
  resolver_decodes_positions_ = decodes_positions && input_shape_resolver_;
  resolved_input_shapes_.clear();  // in net_input_blobs_' order
  resolved_blob_hashes_.clear();
  if (!input_shape_resolver_) return;
  for (const Blob* input : net_input_blobs_) resolved_input_shapes_.push_back(input->shape());
  // The fixed blobs' values now are those of the description the net was
  // built from.
  for (size_t l = 0; l < layers_.size(); ++l) {
    auto& hashes = resolved_blob_hashes_[layer_names_[l]];
    for (size_t b = 0; b < layers_[l]->blobs().size(); ++b) {
      const Blob& blob = *layers_[l]->blobs()[b];
      size_t hash = 0;
      if (IsFixed(*layers_[l], static_cast<int>(b))) {
        const std::vector<float> values = blob.ReadData();
        hash = ValueHash(blob.shape(), values.data(), values.size());
      }
      hashes.push_back(hash);
    }
  }
}

void Net::FollowInputShapes() {
  if (!input_shape_resolver_) return;
  // Every pass asks: a comparison of the inputs' shapes, nothing built.
  bool same = resolved_input_shapes_.size() == net_input_blobs_.size();
  for (size_t i = 0; same && i < net_input_blobs_.size(); ++i)
    same = net_input_blobs_[i]->shape() == resolved_input_shapes_[i];
  if (same) return;
  InputShapes shapes;
  std::vector<std::vector<int>> shape_list;
  for (size_t i = 0; i < net_input_blobs_.size(); ++i) {
    shapes[blob_names_[net_input_blob_indices_[i]]] = net_input_blobs_[i]->shape();
    shape_list.push_back(net_input_blobs_[i]->shape());
  }

  caffe::NetParameter param = settings_;
  try {
    caffe::NetParameter resolved = input_shape_resolver_(shapes);
    param.mutable_layer()->Swap(resolved.mutable_layer());
  } catch (const Error& e) {
    // The net stays as it was: a later pass at shapes it takes runs.
    throw Error("net '" + name_ + "' at input shapes " + ShapesString(shapes) + ": " + e.what());
  }
  // Every blob by name: the rebuilt net takes the same objects.
  BlobsByName reused;
  for (size_t i = 0; i < blobs_.size(); ++i) reused.emplace(blob_names_[i], blobs_[i]);
  Net rebuilt(param, *ctx_, reused, options_);
  const std::string where = "net '" + name_ + "' at input shapes " + ShapesString(shapes) + ": ";

  // The learnable parameters must be the same, in the same order (a
  // solver's history follows them), with as many values (a broadcast
  // operand may lose its leading 1s when the batch grows past 1).
  const auto learnable_names = [](const Net& net) {
    std::vector<std::string> names;
    for (size_t i = 0; i < net.params_.size(); ++i) {
      if (net.param_owners_[i] >= 0) continue;
      const auto [layer, blob] = net.param_layer_indices_[i];
      if (!IsFixed(*net.layers_[layer], blob))
        names.push_back("parameter " + std::to_string(blob) + " of layer '" +
                        net.layer_names_[layer] + "' (" + std::to_string(net.params_[i]->count()) +
                        " values)");
    }
    return names;
  };
  const std::vector<std::string> before = learnable_names(*this), after = learnable_names(rebuilt);
  for (size_t i = 0; i < std::max(before.size(), after.size()); ++i)
    DLC_REQUIRE(i < before.size() && i < after.size() && before[i] == after[i],
                where << "the learnable parameters change with the input shape: "
                      << (i < before.size() ? before[i] : std::string("(none)")) << " before, "
                      << (i < after.size() ? after[i] : std::string("(none)"))
                      << " now; import the model at the shape to use");

  // Storage carried over: every learnable parameter, and each fixed blob
  // whose value the new description leaves as it was.
  std::map<std::string, std::vector<size_t>> hashes;
  int kept_fixed = 0, replaced_fixed = 0;
  for (const auto& layer : param.layer()) {
    if (!rebuilt.has_layer(layer.name())) continue;
    Layer& target = *rebuilt.layer_by_name(layer.name());
    const Layer* source = has_layer(layer.name()) ? layer_by_name(layer.name()) : nullptr;
    auto& layer_hashes = hashes[layer.name()];
    for (size_t b = 0; b < target.blobs().size(); ++b) {
      Blob& blob = *target.blobs()[b];
      const bool fixed = IsFixed(target, static_cast<int>(b));
      size_t hash = 0;
      if (fixed && static_cast<int>(b) < layer.blobs_size()) {
        const auto& data = layer.blobs(static_cast<int>(b)).data();
        hash = ValueHash(blob.shape(), data.data(), data.size());
      }
      layer_hashes.push_back(hash);
      const Blob* old = source && b < source->blobs().size() ? source->blobs()[b].get() : nullptr;
      if (!old || (fixed ? old->shape() != blob.shape() : old->count() != blob.count())) {
        replaced_fixed += fixed;
        continue;
      }
      if (fixed) {
        const auto before_hash = resolved_blob_hashes_.find(layer.name());
        const bool unchanged = static_cast<int>(b) >= layer.blobs_size() ||
                               (before_hash != resolved_blob_hashes_.end() &&
                                b < before_hash->second.size() && before_hash->second[b] == hash);
        if (!unchanged) {
          ++replaced_fixed;
          continue;
        }
        ++kept_fixed;
      }
      blob.ShareData(*old);
    }
  }
  rebuilt.ShareWeights();  // parameters shared by name follow their owners
  // Decoding goes on: the new layers take the state and the caches of the
  // layers they replace.
  if (decode_state_.incremental) {
    rebuilt.SetDecodeState(decode_state_);
    for (size_t l = 0; l < rebuilt.layers_.size(); ++l)
      if (has_layer(rebuilt.layer_names_[l]))
        rebuilt.layers_[l]->TakeDecodeCache(*layer_by_name(rebuilt.layer_names_[l]));
  }

  if (memory_plan_) memory_plan_->ForgetBlobsOf(*this);
  rebuilt.memory_plan_ = std::move(memory_plan_);
  if (training_plan_) training_plan_->ForgetBlobs();
  rebuilt.training_plan_ = std::move(training_plan_);
  rebuilt.debug_info_ = debug_info_;
  rebuilt.after_backward_ = std::move(after_backward_);
  rebuilt.input_shape_resolver_ = std::move(input_shape_resolver_);
  rebuilt.resolver_decodes_positions_ = resolver_decodes_positions_;
  rebuilt.resolved_input_shapes_ = std::move(shape_list);
  rebuilt.resolved_blob_hashes_ = std::move(hashes);
  LOG(INFO) << "Net '" << name_ << "' rebuilt for input shapes " << ShapesString(shapes) << ": "
            << rebuilt.layers_.size() << " layers, " << kept_fixed << " fixed blobs kept, "
            << replaced_fixed << " with new values";
  // A memory plan is redone by the Reshape or Forward that called this.
  *this = std::move(rebuilt);
}

}  // namespace dlcaffe
