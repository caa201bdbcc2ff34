// Caffe's legacy net and solver formats upgraded to the current ones, with
// BVLC Caffe's rules (src/caffe/util/upgrade_proto.cpp) and log lines. Where
// Caffe logs a problem and goes on with a half-upgraded net, we stop with one
// dlcaffe::Error that names the file and the layer.
#include "dlcaffe/caffe_legacy_upgrade.hpp"

#include <glog/logging.h>

#include <map>
#include <vector>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {

using caffe::LayerParameter;
using caffe::NetParameter;
using caffe::V0LayerParameter;
using caffe::V1LayerParameter;

std::string V0Where(const std::string& source, const V0LayerParameter& v0) {
  return source + ": V0 layer '" + v0.name() + "' (type \"" + v0.type() + "\")";
}

// `index`: the layer's position in the net, named when it has no name (< 0: unknown).
std::string V1Where(const std::string& source, const V1LayerParameter& v1, int index = -1) {
  if (!v1.name().empty()) return source + ": V1 layer '" + v1.name() + "'";
  if (index >= 0) return source + ": V1 layer #" + std::to_string(index) + " (unnamed)";
  return source + ": unnamed V1 layer";
}

// Refuses a net that mixes the current `layer` list with the legacy
// `layers` one (Caffe refuses it too).
void CheckNotMixed(const std::string& source, const NetParameter& param) {
  if (param.layer_size() == 0 || param.layers_size() == 0) return;
  const V1LayerParameter& legacy = param.layers(0);
  const std::string legacy_name =
      legacy.has_layer() ? legacy.layer().name() : legacy.name();
  DLC_FAIL(source << ": the net mixes the current 'layer' format (first: '"
                  << param.layer(0).name() << "') with the legacy 'layers' format (first: '"
                  << legacy_name << "'); a net uses one of them. Write the 'layers' "
                     "entries as layer { type: \"Convolution\" ... } (or upgrade a file "
                     "holding only them with upgrade_net_proto_text)");
}

// ---------------------------------------------------------------------------
// V0 -> V1
// ---------------------------------------------------------------------------

// Drops V0 "padding" layers, giving their pad to the convolution or pooling
// layer that reads their output (the only use Caffe allowed).
void UpgradeV0PaddingLayers(const std::string& source, NetParameter* param) {
  google::protobuf::RepeatedPtrField<V1LayerParameter> original;
  original.Swap(param->mutable_layers());
  // Index in `original` of the layer that last wrote each blob (-1: net input).
  std::map<std::string, int> last_writer;
  for (const auto& input : param->input()) last_writer[input] = -1;
  std::vector<bool> is_padding(original.size());
  for (int i = 0; i < original.size(); ++i) {
    is_padding[i] = original.Get(i).layer().type() == "padding";
  }
  for (int i = 0; i < original.size(); ++i) {
    V1LayerParameter* connection = original.Mutable(i);
    const V0LayerParameter& v0 = connection->layer();
    for (int j = 0; j < connection->bottom_size(); ++j) {
      const std::string& blob = connection->bottom(j);
      auto it = last_writer.find(blob);
      DLC_REQUIRE(it != last_writer.end(),
                  V0Where(source, v0) << " reads blob '" << blob
                                      << "', which no earlier layer or net input provides");
      if (it->second < 0 || !is_padding[it->second]) continue;
      const V1LayerParameter& pad_layer = original.Get(it->second);
      DLC_REQUIRE(v0.type() == "conv" || v0.type() == "pool",
                  V0Where(source, v0) << " reads the output of padding layer '"
                                      << pad_layer.layer().name()
                                      << "'; only conv and pool layers can take a padding "
                                         "layer's output");
      DLC_REQUIRE(connection->bottom_size() == 1,
                  V0Where(source, v0) << " reads padding layer '" << pad_layer.layer().name()
                                      << "' and has " << connection->bottom_size()
                                      << " bottoms; it may have only one");
      DLC_REQUIRE(pad_layer.bottom_size() == 1 && pad_layer.top_size() == 1,
                  V0Where(source, pad_layer.layer())
                      << " has " << pad_layer.bottom_size() << " bottoms and "
                      << pad_layer.top_size() << " tops; a padding layer has one of each");
      connection->mutable_layer()->set_pad(pad_layer.layer().pad());
      connection->set_bottom(j, pad_layer.bottom(0));
    }
    for (const auto& top : connection->top()) last_writer[top] = i;
  }
  for (int i = 0; i < original.size(); ++i) {
    if (!is_padding[i]) param->add_layers()->Swap(original.Mutable(i));
  }
}

// One V0 layer (wrapped in a V1 layer that holds its bottoms and tops) -> V1.
void UpgradeV0LayerParameter(const std::string& source, V1LayerParameter* connection) {
  DLC_REQUIRE(connection->has_layer(),
              source << ": the net mixes V0 layers (layers { layer { ... } }) with a V1 layer ("
                     << (connection->name().empty() ? "unnamed" : "'" + connection->name() + "'")
                     << "); upgrade needs all of them in one format");
  V0LayerParameter v0;
  v0.Swap(connection->mutable_layer());
  V1LayerParameter out;
  out.mutable_bottom()->Swap(connection->mutable_bottom());
  out.mutable_top()->Swap(connection->mutable_top());
  const std::string where = V0Where(source, v0);
  connection->clear_layer();
  DLC_REQUIRE(connection->ByteSizeLong() == 0,
              where << ": V0 layers carry their settings inside 'layer { }'; found V1 fields "
                       "beside it");
  const std::string& type = v0.type();
  if (v0.has_name()) out.set_name(v0.name());
  if (v0.has_type()) {
    V1LayerParameter::LayerType v1_type;
    DLC_REQUIRE(UpgradeV0LayerType(type, &v1_type),
                where << ": V0 had no layer type \"" << type << "\", so it cannot be upgraded");
    out.set_type(v1_type);
  }
  out.mutable_blobs()->Swap(v0.mutable_blobs());
  *out.mutable_blobs_lr() = v0.blobs_lr();
  *out.mutable_weight_decay() = v0.weight_decay();

  auto fail = [&](const char* field) {
    DLC_FAIL(where << ": field '" << field << "' has no meaning for this layer type, so it "
                      "cannot be upgraded");
  };
  const bool conv = type == "conv", pool = type == "pool", ip = type == "innerproduct";
  const bool data = type == "data", images = type == "images", window = type == "window_data";
  const bool hdf5 = type == "hdf5_data";

  if (v0.has_num_output()) {
    if (conv) out.mutable_convolution_param()->set_num_output(v0.num_output());
    else if (ip) out.mutable_inner_product_param()->set_num_output(v0.num_output());
    else fail("num_output");
  }
  if (v0.has_biasterm()) {
    if (conv) out.mutable_convolution_param()->set_bias_term(v0.biasterm());
    else if (ip) out.mutable_inner_product_param()->set_bias_term(v0.biasterm());
    else fail("biasterm");
  }
  if (v0.has_weight_filler()) {
    if (conv) *out.mutable_convolution_param()->mutable_weight_filler() = v0.weight_filler();
    else if (ip) *out.mutable_inner_product_param()->mutable_weight_filler() = v0.weight_filler();
    else fail("weight_filler");
  }
  if (v0.has_bias_filler()) {
    if (conv) *out.mutable_convolution_param()->mutable_bias_filler() = v0.bias_filler();
    else if (ip) *out.mutable_inner_product_param()->mutable_bias_filler() = v0.bias_filler();
    else fail("bias_filler");
  }
  if (v0.has_pad()) {
    if (conv) out.mutable_convolution_param()->add_pad(v0.pad());
    else if (pool) out.mutable_pooling_param()->set_pad(v0.pad());
    else fail("pad");
  }
  if (v0.has_kernelsize()) {
    if (conv) out.mutable_convolution_param()->add_kernel_size(v0.kernelsize());
    else if (pool) out.mutable_pooling_param()->set_kernel_size(v0.kernelsize());
    else fail("kernelsize");
  }
  if (v0.has_group()) {
    if (conv) out.mutable_convolution_param()->set_group(v0.group());
    else fail("group");
  }
  if (v0.has_stride()) {
    if (conv) out.mutable_convolution_param()->add_stride(v0.stride());
    else if (pool) out.mutable_pooling_param()->set_stride(v0.stride());
    else fail("stride");
  }
  if (v0.has_pool()) {
    if (!pool) fail("pool");
    switch (v0.pool()) {
      case V0LayerParameter::MAX:
        out.mutable_pooling_param()->set_pool(caffe::PoolingParameter::MAX);
        break;
      case V0LayerParameter::AVE:
        out.mutable_pooling_param()->set_pool(caffe::PoolingParameter::AVE);
        break;
      case V0LayerParameter::STOCHASTIC:
        out.mutable_pooling_param()->set_pool(caffe::PoolingParameter::STOCHASTIC);
        break;
    }
  }
  if (v0.has_dropout_ratio()) {
    if (type == "dropout") out.mutable_dropout_param()->set_dropout_ratio(v0.dropout_ratio());
    else fail("dropout_ratio");
  }
  const bool lrn = type == "lrn";
  if (v0.has_local_size()) {
    if (lrn) out.mutable_lrn_param()->set_local_size(v0.local_size());
    else fail("local_size");
  }
  if (v0.has_alpha()) {
    if (lrn) out.mutable_lrn_param()->set_alpha(v0.alpha());
    else fail("alpha");
  }
  if (v0.has_beta()) {
    if (lrn) out.mutable_lrn_param()->set_beta(v0.beta());
    else fail("beta");
  }
  if (v0.has_k()) {
    if (lrn) out.mutable_lrn_param()->set_k(v0.k());
    else fail("k");
  }
  if (v0.has_source()) {
    if (data) out.mutable_data_param()->set_source(v0.source());
    else if (hdf5) out.mutable_hdf5_data_param()->set_source(v0.source());
    else if (images) out.mutable_image_data_param()->set_source(v0.source());
    else if (window) out.mutable_window_data_param()->set_source(v0.source());
    else if (type == "infogain_loss") out.mutable_infogain_loss_param()->set_source(v0.source());
    else fail("source");
  }
  // The transformation fields go to transform_param whatever the type (as
  // in Caffe).
  if (v0.has_scale()) out.mutable_transform_param()->set_scale(v0.scale());
  if (v0.has_meanfile()) out.mutable_transform_param()->set_mean_file(v0.meanfile());
  if (v0.has_cropsize()) out.mutable_transform_param()->set_crop_size(v0.cropsize());
  if (v0.has_mirror()) out.mutable_transform_param()->set_mirror(v0.mirror());
  if (v0.has_batchsize()) {
    if (data) out.mutable_data_param()->set_batch_size(v0.batchsize());
    else if (hdf5) out.mutable_hdf5_data_param()->set_batch_size(v0.batchsize());
    else if (images) out.mutable_image_data_param()->set_batch_size(v0.batchsize());
    else if (window) out.mutable_window_data_param()->set_batch_size(v0.batchsize());
    else fail("batchsize");
  }
  if (v0.has_rand_skip()) {
    if (data) out.mutable_data_param()->set_rand_skip(v0.rand_skip());
    else if (images) out.mutable_image_data_param()->set_rand_skip(v0.rand_skip());
    else fail("rand_skip");
  }
  if (v0.has_shuffle_images()) {
    if (images) out.mutable_image_data_param()->set_shuffle(v0.shuffle_images());
    else fail("shuffle_images");
  }
  if (v0.has_new_height()) {
    if (images) out.mutable_image_data_param()->set_new_height(v0.new_height());
    else fail("new_height");
  }
  if (v0.has_new_width()) {
    if (images) out.mutable_image_data_param()->set_new_width(v0.new_width());
    else fail("new_width");
  }
  if (v0.has_new_num()) fail("new_num");
  if (v0.has_new_channels()) fail("new_channels");
  if (v0.has_concat_dim()) {
    if (type == "concat") out.mutable_concat_param()->set_concat_dim(v0.concat_dim());
    else fail("concat_dim");
  }
  if (v0.has_det_fg_threshold()) {
    if (window) out.mutable_window_data_param()->set_fg_threshold(v0.det_fg_threshold());
    else fail("det_fg_threshold");
  }
  if (v0.has_det_bg_threshold()) {
    if (window) out.mutable_window_data_param()->set_bg_threshold(v0.det_bg_threshold());
    else fail("det_bg_threshold");
  }
  if (v0.has_det_fg_fraction()) {
    if (window) out.mutable_window_data_param()->set_fg_fraction(v0.det_fg_fraction());
    else fail("det_fg_fraction");
  }
  if (v0.has_det_context_pad()) {
    if (window) out.mutable_window_data_param()->set_context_pad(v0.det_context_pad());
    else fail("det_context_pad");
  }
  if (v0.has_det_crop_mode()) {
    if (window) out.mutable_window_data_param()->set_crop_mode(v0.det_crop_mode());
    else fail("det_crop_mode");
  }
  if (v0.has_hdf5_output_param()) {
    if (type == "hdf5_output") *out.mutable_hdf5_output_param() = v0.hdf5_output_param();
    else fail("hdf5_output_param");
  }
  connection->Swap(&out);
}

// ---------------------------------------------------------------------------
// Data transformation fields
// ---------------------------------------------------------------------------

// Moves scale/mean_file/crop_size/mirror of `legacy` (DataParameter,
// ImageDataParameter or WindowDataParameter) into `transform`.
template <typename Legacy>
void MoveTransformFields(Legacy* legacy, caffe::TransformationParameter* transform) {
  if (legacy->has_scale()) {
    transform->set_scale(legacy->scale());
    legacy->clear_scale();
  }
  if (legacy->has_mean_file()) {
    transform->set_mean_file(legacy->mean_file());
    legacy->clear_mean_file();
  }
  if (legacy->has_crop_size()) {
    transform->set_crop_size(legacy->crop_size());
    legacy->clear_crop_size();
  }
  if (legacy->has_mirror()) {
    transform->set_mirror(legacy->mirror());
    legacy->clear_mirror();
  }
}

template <typename Legacy>
bool HasTransformFields(const Legacy& p) {
  return p.has_scale() || p.has_mean_file() || p.has_crop_size() || p.has_mirror();
}

bool IsType(const V1LayerParameter& layer, V1LayerParameter::LayerType v1, const char*) {
  return layer.type() == v1;
}
bool IsType(const LayerParameter& layer, V1LayerParameter::LayerType, const char* v2) {
  return layer.type() == v2;
}

template <typename Layer>
void UpgradeLayerDataTransformation(Layer* layer) {
  if (IsType(*layer, V1LayerParameter::DATA, "Data") && HasTransformFields(layer->data_param()))
    MoveTransformFields(layer->mutable_data_param(), layer->mutable_transform_param());
  if (IsType(*layer, V1LayerParameter::IMAGE_DATA, "ImageData") &&
      HasTransformFields(layer->image_data_param()))
    MoveTransformFields(layer->mutable_image_data_param(), layer->mutable_transform_param());
  if (IsType(*layer, V1LayerParameter::WINDOW_DATA, "WindowData") &&
      HasTransformFields(layer->window_data_param()))
    MoveTransformFields(layer->mutable_window_data_param(), layer->mutable_transform_param());
}

template <typename Layer>
bool DataLayerNeedsUpgrade(const Layer& layer) {
  return (IsType(layer, V1LayerParameter::DATA, "Data") &&
          HasTransformFields(layer.data_param())) ||
         (IsType(layer, V1LayerParameter::IMAGE_DATA, "ImageData") &&
          HasTransformFields(layer.image_data_param())) ||
         (IsType(layer, V1LayerParameter::WINDOW_DATA, "WindowData") &&
          HasTransformFields(layer.window_data_param()));
}

// ---------------------------------------------------------------------------
// V1 -> V2
// ---------------------------------------------------------------------------

const std::map<V1LayerParameter::LayerType, const char*>& V1TypeNames() {
  static const std::map<V1LayerParameter::LayerType, const char*> names = {
      {V1LayerParameter::NONE, ""},
      {V1LayerParameter::ABSVAL, "AbsVal"},
      {V1LayerParameter::ACCURACY, "Accuracy"},
      {V1LayerParameter::ARGMAX, "ArgMax"},
      {V1LayerParameter::BNLL, "BNLL"},
      {V1LayerParameter::CONCAT, "Concat"},
      {V1LayerParameter::CONTRASTIVE_LOSS, "ContrastiveLoss"},
      {V1LayerParameter::CONVOLUTION, "Convolution"},
      {V1LayerParameter::DATA, "Data"},
      {V1LayerParameter::DECONVOLUTION, "Deconvolution"},
      {V1LayerParameter::DROPOUT, "Dropout"},
      {V1LayerParameter::DUMMY_DATA, "DummyData"},
      {V1LayerParameter::EUCLIDEAN_LOSS, "EuclideanLoss"},
      {V1LayerParameter::ELTWISE, "Eltwise"},
      {V1LayerParameter::EXP, "Exp"},
      {V1LayerParameter::FLATTEN, "Flatten"},
      {V1LayerParameter::HDF5_DATA, "HDF5Data"},
      {V1LayerParameter::HDF5_OUTPUT, "HDF5Output"},
      {V1LayerParameter::HINGE_LOSS, "HingeLoss"},
      {V1LayerParameter::IM2COL, "Im2col"},
      {V1LayerParameter::IMAGE_DATA, "ImageData"},
      {V1LayerParameter::INFOGAIN_LOSS, "InfogainLoss"},
      {V1LayerParameter::INNER_PRODUCT, "InnerProduct"},
      {V1LayerParameter::LRN, "LRN"},
      {V1LayerParameter::MEMORY_DATA, "MemoryData"},
      {V1LayerParameter::MULTINOMIAL_LOGISTIC_LOSS, "MultinomialLogisticLoss"},
      {V1LayerParameter::MVN, "MVN"},
      {V1LayerParameter::POOLING, "Pooling"},
      {V1LayerParameter::POWER, "Power"},
      {V1LayerParameter::RELU, "ReLU"},
      {V1LayerParameter::SIGMOID, "Sigmoid"},
      {V1LayerParameter::SIGMOID_CROSS_ENTROPY_LOSS, "SigmoidCrossEntropyLoss"},
      {V1LayerParameter::SILENCE, "Silence"},
      {V1LayerParameter::SOFTMAX, "Softmax"},
      {V1LayerParameter::SOFTMAX_LOSS, "SoftmaxWithLoss"},
      {V1LayerParameter::SPLIT, "Split"},
      {V1LayerParameter::SLICE, "Slice"},
      {V1LayerParameter::TANH, "TanH"},
      {V1LayerParameter::WINDOW_DATA, "WindowData"},
      {V1LayerParameter::THRESHOLD, "Threshold"},
  };
  return names;
}

// Copies every message field of `v1` whose name LayerParameter shares
// (convolution_param, transform_param, loss_param, ...): the two formats
// use the same parameter messages.
void CopySharedParams(const V1LayerParameter& v1, LayerParameter* layer) {
  using google::protobuf::FieldDescriptor;
  const auto* v1_reflection = v1.GetReflection();
  const auto* reflection = layer->GetReflection();
  const auto* descriptor = layer->GetDescriptor();
  std::vector<const FieldDescriptor*> fields;
  v1_reflection->ListFields(v1, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || field->is_repeated()) continue;
    const FieldDescriptor* target = descriptor->FindFieldByName(field->name());
    if (target == nullptr || target->message_type() != field->message_type()) continue;
    reflection->MutableMessage(layer, target)->CopyFrom(v1_reflection->GetMessage(v1, field));
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Public steps
// ---------------------------------------------------------------------------

bool UpgradeV0LayerType(const std::string& v0_type, V1LayerParameter::LayerType* type) {
  static const std::map<std::string, V1LayerParameter::LayerType> types = {
      {"accuracy", V1LayerParameter::ACCURACY},
      {"bnll", V1LayerParameter::BNLL},
      {"concat", V1LayerParameter::CONCAT},
      {"conv", V1LayerParameter::CONVOLUTION},
      {"data", V1LayerParameter::DATA},
      {"dropout", V1LayerParameter::DROPOUT},
      {"euclidean_loss", V1LayerParameter::EUCLIDEAN_LOSS},
      {"flatten", V1LayerParameter::FLATTEN},
      {"hdf5_data", V1LayerParameter::HDF5_DATA},
      {"hdf5_output", V1LayerParameter::HDF5_OUTPUT},
      {"im2col", V1LayerParameter::IM2COL},
      {"images", V1LayerParameter::IMAGE_DATA},
      {"infogain_loss", V1LayerParameter::INFOGAIN_LOSS},
      {"innerproduct", V1LayerParameter::INNER_PRODUCT},
      {"lrn", V1LayerParameter::LRN},
      {"multinomial_logistic_loss", V1LayerParameter::MULTINOMIAL_LOGISTIC_LOSS},
      {"pool", V1LayerParameter::POOLING},
      {"relu", V1LayerParameter::RELU},
      {"sigmoid", V1LayerParameter::SIGMOID},
      {"softmax", V1LayerParameter::SOFTMAX},
      {"softmax_loss", V1LayerParameter::SOFTMAX_LOSS},
      {"split", V1LayerParameter::SPLIT},
      {"tanh", V1LayerParameter::TANH},
      {"window_data", V1LayerParameter::WINDOW_DATA},
  };
  auto it = types.find(v0_type);
  if (it == types.end()) return false;
  *type = it->second;
  return true;
}

std::string UpgradeV1LayerType(V1LayerParameter::LayerType type) {
  auto it = V1TypeNames().find(type);
  DLC_REQUIRE(it != V1TypeNames().end(), "V1 layer type " << int(type) << " is unknown");
  return it->second;
}

bool NetNeedsV0ToV1Upgrade(const NetParameter& param) {
  for (const auto& layer : param.layers())
    if (layer.has_layer()) return true;
  return false;
}

bool NetNeedsV1ToV2Upgrade(const NetParameter& param) { return param.layers_size() > 0; }

bool NetNeedsDataUpgrade(const NetParameter& param) {
  for (const auto& layer : param.layers())
    if (DataLayerNeedsUpgrade(layer)) return true;
  for (const auto& layer : param.layer())
    if (DataLayerNeedsUpgrade(layer)) return true;
  return false;
}

bool NetNeedsInputUpgrade(const NetParameter& param) { return param.input_size() > 0; }

bool NetNeedsBatchNormUpgrade(const NetParameter& param) {
  // The old BatchNorm definition declared its three statistics as params.
  for (const auto& layer : param.layer())
    if (layer.type() == "BatchNorm" && layer.param_size() == 3) return true;
  return false;
}

bool NetNeedsUpgrade(const NetParameter& param) {
  return NetNeedsV0ToV1Upgrade(param) || NetNeedsV1ToV2Upgrade(param) ||
         NetNeedsDataUpgrade(param) || NetNeedsInputUpgrade(param) ||
         NetNeedsBatchNormUpgrade(param);
}

void UpgradeV0Net(const std::string& source, NetParameter* param) {
  CheckNotMixed(source, *param);
  UpgradeV0PaddingLayers(source, param);
  for (auto& layer : *param->mutable_layers()) UpgradeV0LayerParameter(source, &layer);
}

void UpgradeNetDataTransformation(NetParameter* param) {
  for (auto& layer : *param->mutable_layers()) UpgradeLayerDataTransformation(&layer);
  for (auto& layer : *param->mutable_layer()) UpgradeLayerDataTransformation(&layer);
}

void UpgradeV1LayerParameter(const std::string& source, V1LayerParameter* v1,
                             LayerParameter* layer) {
  DLC_REQUIRE(!v1->has_layer(),
              V1Where(source, *v1) << " holds a V0 'layer { }' beside V1 fields; a layer is either V0 or V1");
  layer->Clear();
  *layer->mutable_bottom() = v1->bottom();
  *layer->mutable_top() = v1->top();
  if (v1->has_name()) layer->set_name(v1->name());
  *layer->mutable_include() = v1->include();
  *layer->mutable_exclude() = v1->exclude();
  if (v1->has_type()) layer->set_type(UpgradeV1LayerType(v1->type()));
  layer->mutable_blobs()->Swap(v1->mutable_blobs());
  for (int i = 0; i < v1->param_size(); ++i) {
    while (layer->param_size() <= i) layer->add_param();
    layer->mutable_param(i)->set_name(v1->param(i));
  }
  for (int i = 0; i < v1->blob_share_mode_size(); ++i) {
    while (layer->param_size() <= i) layer->add_param();
    layer->mutable_param(i)->set_share_mode(
        v1->blob_share_mode(i) == V1LayerParameter::STRICT ? caffe::ParamSpec::STRICT
                                                           : caffe::ParamSpec::PERMISSIVE);
  }
  for (int i = 0; i < v1->blobs_lr_size(); ++i) {
    while (layer->param_size() <= i) layer->add_param();
    layer->mutable_param(i)->set_lr_mult(v1->blobs_lr(i));
  }
  for (int i = 0; i < v1->weight_decay_size(); ++i) {
    while (layer->param_size() <= i) layer->add_param();
    layer->mutable_param(i)->set_decay_mult(v1->weight_decay(i));
  }
  *layer->mutable_loss_weight() = v1->loss_weight();
  CopySharedParams(*v1, layer);
}

void UpgradeV1Net(const std::string& source, NetParameter* param) {
  CheckNotMixed(source, *param);
  google::protobuf::RepeatedPtrField<V1LayerParameter> v1_layers;
  v1_layers.Swap(param->mutable_layers());
  param->clear_layer();
  for (int i = 0; i < v1_layers.size(); ++i) {
    V1LayerParameter* v1 = v1_layers.Mutable(i);
    DLC_REQUIRE(!v1->has_layer(), V1Where(source, *v1, i)
                                      << " holds a V0 'layer { }' beside V1 fields; a layer "
                                         "is either V0 or V1");
    DLC_REQUIRE(!v1->has_type() || V1TypeNames().count(v1->type()),
                V1Where(source, *v1, i) << " has type " << int(v1->type())
                                        << ", which V1 never had");
    UpgradeV1LayerParameter(source, v1, param->add_layer());
  }
}

void UpgradeNetInput(const std::string& source, NetParameter* param) {
  const int n = param->input_size();
  const bool has_shape = param->input_shape_size() > 0;
  const bool has_dim = param->input_dim_size() > 0;
  // Inputs with neither shapes nor dims: a legacy .caffemodel that lists
  // its net's inputs; dropping them is the upgrade.
  if (has_shape || has_dim) {
    DLC_REQUIRE(!has_shape || param->input_shape_size() == n,
                source << ": " << n << " input(s) but " << param->input_shape_size()
                       << " input_shape(s)");
    DLC_REQUIRE(has_shape || param->input_dim_size() == 4 * n,
                source << ": " << n << " input(s) need " << 4 * n << " input_dim values (four "
                       << "each), found " << param->input_dim_size()
                       << "; or give each an input_shape");
    LayerParameter input;
    input.set_name("input");
    input.set_type("Input");
    for (int i = 0; i < n; ++i) {
      input.add_top(param->input(i));
      caffe::BlobShape* shape = input.mutable_input_param()->add_shape();
      if (has_shape) {
        *shape = param->input_shape(i);
      } else {
        for (int d = 0; d < 4; ++d) shape->add_dim(param->input_dim(4 * i + d));
      }
    }
    // The Input layer goes first, before the layers that read its tops.
    google::protobuf::RepeatedPtrField<LayerParameter> layers;
    layers.Swap(param->mutable_layer());
    param->add_layer()->Swap(&input);
    for (auto& layer : layers) param->add_layer()->Swap(&layer);
  }
  param->clear_input();
  param->clear_input_shape();
  param->clear_input_dim();
}

void UpgradeNetBatchNorm(NetParameter* param) {
  for (auto& layer : *param->mutable_layer()) {
    if (layer.type() != "BatchNorm" || layer.param_size() != 3) continue;
    for (auto& spec : *layer.mutable_param()) {
      spec.set_lr_mult(0.f);
      spec.set_decay_mult(0.f);
    }
  }
}

bool UpgradeNetAsNeeded(const std::string& source, NetParameter* param) {
  CheckNotMixed(source, *param);
  bool upgraded = false;
  if (NetNeedsV0ToV1Upgrade(*param)) {
    LOG(INFO) << "Attempting to upgrade input file specified using deprecated "
                 "V0LayerParameter: " << source;
    UpgradeV0Net(source, param);
    LOG(INFO) << "Successfully upgraded file specified using deprecated V0LayerParameter";
    LOG(WARNING) << "Note that future Caffe releases will not support V0NetParameter; use "
                    "upgrade_net_proto_text for prototxt and upgrade_net_proto_binary for "
                    "model weights to upgrade this and any other net protos to the new "
                    "format.";
    upgraded = true;
  }
  if (NetNeedsDataUpgrade(*param)) {
    LOG(INFO) << "Attempting to upgrade input file specified using deprecated "
                 "transformation parameters: " << source;
    UpgradeNetDataTransformation(param);
    LOG(INFO) << "Successfully upgraded file specified using deprecated data "
                 "transformation parameters.";
    LOG(WARNING) << "Note that future Caffe releases will only support transform_param "
                    "messages for transformation fields.";
    upgraded = true;
  }
  if (NetNeedsV1ToV2Upgrade(*param)) {
    LOG(INFO) << "Attempting to upgrade input file specified using deprecated "
                 "V1LayerParameter: " << source;
    UpgradeV1Net(source, param);
    LOG(INFO) << "Successfully upgraded file specified using deprecated V1LayerParameter";
    upgraded = true;
  }
  if (NetNeedsInputUpgrade(*param)) {
    LOG(INFO) << "Attempting to upgrade input file specified using deprecated input "
                 "fields: " << source;
    UpgradeNetInput(source, param);
    LOG(INFO) << "Successfully upgraded file specified using deprecated input fields.";
    LOG(WARNING) << "Note that future Caffe releases will only support input layers and "
                    "not input fields.";
    upgraded = true;
  }
  if (NetNeedsBatchNormUpgrade(*param)) {
    LOG(INFO) << "Attempting to upgrade batch norm layers using deprecated params: "
              << source;
    UpgradeNetBatchNorm(param);
    LOG(INFO) << "Successfully upgraded batch norm layers using deprecated params.";
    upgraded = true;
  }
  return upgraded;
}

// ---------------------------------------------------------------------------
// Solvers
// ---------------------------------------------------------------------------

std::string SolverTypeName(caffe::SolverParameter::SolverType type) {
  switch (type) {
    case caffe::SolverParameter::SGD: return "SGD";
    case caffe::SolverParameter::NESTEROV: return "Nesterov";
    case caffe::SolverParameter::ADAGRAD: return "AdaGrad";
    case caffe::SolverParameter::RMSPROP: return "RMSProp";
    case caffe::SolverParameter::ADADELTA: return "AdaDelta";
    case caffe::SolverParameter::ADAM: return "Adam";
  }
  DLC_FAIL("solver_type " << int(type) << " is unknown");
  return "";
}

bool SolverNeedsTypeUpgrade(const caffe::SolverParameter& param) {
  return param.has_solver_type();
}

bool UpgradeSolverAsNeeded(const std::string& source, caffe::SolverParameter* param) {
  bool upgraded = false;
  if (SolverNeedsTypeUpgrade(*param)) {
    LOG(INFO) << "Attempting to upgrade input file specified using deprecated "
                 "'solver_type' field (enum)': " << source;
    const std::string type = SolverTypeName(param->solver_type());
    // Caffe refuses both fields; we accept them when they agree.
    DLC_REQUIRE(!param->has_type() || param->type() == type,
                source << ": both 'type: \"" << param->type() << "\"' and the deprecated "
                       << "'solver_type: " << caffe::SolverParameter::SolverType_Name(
                                                  param->solver_type())
                       << "' are set and disagree; keep only 'type'");
    param->set_type(type);
    param->clear_solver_type();
    LOG(INFO) << "Successfully upgraded file specified using deprecated 'solver_type' "
                 "field (enum) to 'type' field (string).";
    LOG(WARNING) << "Note that future Caffe releases will only support 'type' field "
                    "(string) for a solver's type.";
    upgraded = true;
  }
  // Nets written inside the solver get the net upgrades too.
  if (param->has_net_param())
    upgraded |= UpgradeNetAsNeeded(source + " (net_param)", param->mutable_net_param());
  if (param->has_train_net_param())
    upgraded |=
        UpgradeNetAsNeeded(source + " (train_net_param)", param->mutable_train_net_param());
  for (int i = 0; i < param->test_net_param_size(); ++i)
    upgraded |= UpgradeNetAsNeeded(source + " (test_net_param " + std::to_string(i) + ")",
                                   param->mutable_test_net_param(i));
  return upgraded;
}

}  // namespace dlcaffe
