// Neural-network ONNX ops: Conv, ConvTranspose, pooling, the
// normalizations, LRN, Gemm/MatMul, Softmax/LogSoftmax, Resize/Upsample and
// the Reduce ops, each as dlcaffe layers (Caffe's where they compute the
// same, dlcaffe's own otherwise).
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "import/onnx_graph.hpp"
#include "import/onnx_host_ops.hpp"

namespace dlcaffe {
namespace onnx_import {
namespace {

// Per spatial axis: kernel, stride, dilation and the two pads, with
// auto_pad resolved.
struct Window {
  std::vector<int64_t> kernel, stride, dilation, pad_begin, pad_end;
  bool symmetric() const { return pad_begin == pad_end; }
};

Window ReadWindow(const NodeContext& ctx, const std::vector<int64_t>& in_spatial,
                  const std::vector<int64_t>& kernel) {
  const size_t n = in_spatial.size();
  Window w;
  w.kernel = kernel;
  w.stride = ctx.attr_ints("strides");
  w.dilation = ctx.attr_ints("dilations");
  if (w.stride.empty()) w.stride.assign(n, 1);
  if (w.dilation.empty()) w.dilation.assign(n, 1);
  ONNX_REQUIRE(ctx, w.kernel.size() == n && w.stride.size() == n && w.dilation.size() == n,
               "kernel_shape, strides and dilations must have one entry per spatial axis (" << n << ")");
  const std::vector<int64_t> pads = ctx.attr_ints("pads");
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  w.pad_begin.assign(n, 0);
  w.pad_end.assign(n, 0);
  if (auto_pad == "NOTSET") {
    if (!pads.empty()) {
      ONNX_REQUIRE(ctx, pads.size() == 2 * n, "pads must have 2 entries per spatial axis");
      for (size_t i = 0; i < n; ++i) {
        w.pad_begin[i] = pads[i];
        w.pad_end[i] = pads[i + n];
      }
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      const int64_t out = (in_spatial[i] + w.stride[i] - 1) / w.stride[i];
      const int64_t total = std::max<int64_t>(
          0, (out - 1) * w.stride[i] + (w.kernel[i] - 1) * w.dilation[i] + 1 - in_spatial[i]);
      const int64_t small = total / 2, large = total - small;
      w.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : large;
      w.pad_end[i] = auto_pad == "SAME_UPPER" ? large : small;
    }
  } else {
    ONNX_REQUIRE(ctx, auto_pad == "VALID", "auto_pad '" << auto_pad << "' is not supported");
  }
  return w;
}

// A Pad layer in front for pads that differ between the two sides (Caffe's
// layers pad symmetrically); returns its blob, the window then unpadded.
std::string PadAsymmetric(NodeContext& ctx, const std::string& bottom, std::vector<int64_t>* shape,
                          Window* w, float value) {
  if (w->symmetric()) return bottom;
  const std::string top = ctx.TempBlob("pad");
  caffe::LayerParameter* layer = ctx.AddLayer("Pad", {bottom}, {top}, "pad");
  caffe::PadParameter* p = layer->mutable_pad_param();
  p->set_value(value);
  p->add_pad_begin(0); p->add_pad_begin(0);
  p->add_pad_end(0); p->add_pad_end(0);
  for (size_t i = 0; i < w->kernel.size(); ++i) {
    p->add_pad_begin(static_cast<int>(w->pad_begin[i]));
    p->add_pad_end(static_cast<int>(w->pad_end[i]));
    (*shape)[2 + i] += w->pad_begin[i] + w->pad_end[i];
    w->pad_begin[i] = w->pad_end[i] = 0;
  }
  return top;
}

void SetWindow2d(const Window& w, caffe::ConvolutionParameter* p) {
  p->set_kernel_h(static_cast<int>(w.kernel[0]));
  p->set_kernel_w(static_cast<int>(w.kernel[1]));
  p->set_stride_h(static_cast<int>(w.stride[0]));
  p->set_stride_w(static_cast<int>(w.stride[1]));
  p->set_pad_h(static_cast<int>(w.pad_begin[0]));
  p->set_pad_w(static_cast<int>(w.pad_begin[1]));
  if (w.dilation[0] != 1 || w.dilation[1] != 1) {
    p->add_dilation(static_cast<int>(w.dilation[0]));
    p->add_dilation(static_cast<int>(w.dilation[1]));
  }
}

void ImportConv(NodeContext& ctx) {
  ctx.CheckAttributes({"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad"});
  std::vector<int64_t> in = ctx.shape(0);
  ONNX_REQUIRE(ctx, in.size() == 4, "convolutions over other than 2 spatial axes are not supported, the input is "
                                        << ShapeString(in));
  const auto& wshape = ctx.input(1).shape;
  ONNX_REQUIRE(ctx, wshape.size() == 4, "the weights must be M x C/group x kH x kW");
  const int64_t group = ctx.attr_int("group", 1);
  ONNX_REQUIRE(ctx, in[1] == wshape[1] * group, "input channels " << in[1] << " do not match weights "
                                                  << ShapeString(wshape) << " with group " << group);
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  if (kernel.empty()) kernel = {wshape[2], wshape[3]};
  Window w = ReadWindow(ctx, {in[2], in[3]}, kernel);
  const std::string bottom = PadAsymmetric(ctx, ctx.blob(0), &in, &w, 0.f);
  caffe::LayerParameter* layer = ctx.AddLayer("Convolution", {bottom}, {ctx.output_name(0)});
  caffe::ConvolutionParameter* p = layer->mutable_convolution_param();
  p->set_num_output(static_cast<int>(wshape[0]));
  p->set_group(static_cast<int>(group));
  p->set_bias_term(ctx.has_input(2));
  SetWindow2d(w, p);
  ctx.AddParamBlob(layer, 1);
  if (ctx.has_input(2)) ctx.AddParamBlob(layer, 2);
  std::vector<int64_t> out = {in[0], wshape[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    const int64_t extent = (w.kernel[i] - 1) * w.dilation[i] + 1;
    out[2 + i] = (in[2 + i] + 2 * w.pad_begin[i] - extent) / w.stride[i] + 1;
    ONNX_REQUIRE(ctx, out[2 + i] > 0, "the kernel does not fit the input " << ShapeString(in));
  }
  ctx.SetOutput(0, out);
}
REGISTER_ONNX_OP(ImportConv, "Conv");

void ImportConvTranspose(NodeContext& ctx) {
  ctx.CheckAttributes({"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad",
                       "output_padding", "output_shape"});
  const auto& in = ctx.shape(0);
  ONNX_REQUIRE(ctx, in.size() == 4, "transposed convolutions over other than 2 spatial axes are not supported");
  const auto& wshape = ctx.input(1).shape;
  const int64_t group = ctx.attr_int("group", 1);
  ONNX_REQUIRE(ctx, wshape.size() == 4 && wshape[0] == in[1],
               "the weights " << ShapeString(wshape) << " do not fit the input " << ShapeString(in));
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  if (kernel.empty()) kernel = {wshape[2], wshape[3]};
  ONNX_REQUIRE(ctx, ctx.attr_string("auto_pad", "NOTSET") == "NOTSET" || ctx.attr_string("auto_pad", "") == "VALID",
               "auto_pad is not supported for ConvTranspose");
  Window w = ReadWindow(ctx, {in[2], in[3]}, kernel);
  std::vector<int64_t> out_pad = ctx.attr_ints("output_padding");
  if (out_pad.empty()) out_pad = {0, 0};
  ONNX_REQUIRE(ctx, out_pad.size() == 2, "output_padding must have one entry per spatial axis (2)");
  std::vector<int64_t> full(2), out(2);
  for (int i = 0; i < 2; ++i) {
    full[i] = w.stride[i] * (in[2 + i] - 1) + (w.kernel[i] - 1) * w.dilation[i] + 1;
    out[i] = full[i] - w.pad_begin[i] - w.pad_end[i] + out_pad[i];
  }
  const std::vector<int64_t> output_shape = ctx.attr_ints("output_shape");
  if (!output_shape.empty()) {
    // Explicit output size: the pads follow from it (SAME_UPPER-like split).
    ONNX_REQUIRE(ctx, output_shape.size() >= 2, "output_shape needs the spatial sizes");
    for (int i = 0; i < 2; ++i) {
      out[i] = output_shape[output_shape.size() - 2 + i];
      const int64_t total = full[i] + out_pad[i] - out[i];
      w.pad_begin[i] = total / 2;
      w.pad_end[i] = total - total / 2;
      out_pad[i] = 0;
    }
  }
  // The result is rows [pad_begin, pad_begin + out) of the full transposed
  // convolution, which output_padding may extend past its end (zeros, plus
  // the bias).
  std::vector<int64_t> extend(2);
  for (int i = 0; i < 2; ++i) {
    ONNX_REQUIRE(ctx, w.pad_begin[i] >= 0 && out[i] > 0, "negative pads are not supported");
    extend[i] = std::max<int64_t>(0, w.pad_begin[i] + out[i] - full[i]);
  }
  const bool extended = extend[0] > 0 || extend[1] > 0;
  const bool plain = w.symmetric() && !extended && out[0] == full[0] - 2 * w.pad_begin[0] &&
                     out[1] == full[1] - 2 * w.pad_begin[1];
  const bool bias = ctx.has_input(2);
  std::string current = plain ? ctx.output_name(0) : ctx.TempBlob("full");
  caffe::LayerParameter* layer = ctx.AddLayer("Deconvolution", {ctx.blob(0)}, {current});
  caffe::ConvolutionParameter* p = layer->mutable_convolution_param();
  p->set_num_output(static_cast<int>(wshape[1] * group));
  p->set_group(static_cast<int>(group));
  p->set_bias_term(bias && !extended);
  Window deconv = w;
  if (!plain) deconv.pad_begin = deconv.pad_end = {0, 0};
  SetWindow2d(deconv, p);
  ctx.AddParamBlob(layer, 1);
  if (bias && !extended) ctx.AddParamBlob(layer, 2);
  if (extended) {
    const std::string padded = ctx.TempBlob("extended");
    caffe::PadParameter* pad = ctx.AddLayer("Pad", {current}, {padded}, "extend")->mutable_pad_param();
    for (int d = 0; d < 4; ++d) {
      pad->add_pad_begin(0);
      pad->add_pad_end(d < 2 ? 0 : static_cast<int>(extend[d - 2]));
    }
    current = padded;
  }
  if (!plain) {
    const std::string cropped = extended && bias ? ctx.TempBlob("cropped") : ctx.output_name(0);
    caffe::LayerParameter* crop = ctx.AddLayer("StridedSlice", {current}, {cropped}, "crop");
    for (int i = 0; i < 2; ++i) {
      crop->mutable_strided_slice_param()->add_axis(2 + i);
      crop->mutable_strided_slice_param()->add_start(static_cast<int>(w.pad_begin[i]));
      crop->mutable_strided_slice_param()->add_end(static_cast<int>(w.pad_begin[i] + out[i]));
    }
    current = cropped;
  }
  if (extended && bias) {
    caffe::LayerParameter* b = ctx.AddLayer("Bias", {current}, {ctx.output_name(0)}, "bias");
    b->mutable_bias_param()->set_axis(1);
    b->mutable_bias_param()->set_num_axes(1);
    ctx.AddParamBlob(b, 2);
  }
  ctx.SetOutput(0, {in[0], wshape[1] * group, out[0], out[1]});
}
REGISTER_ONNX_OP(ImportConvTranspose, "ConvTranspose");

void ImportPool(NodeContext& ctx) {
  const bool max = ctx.op() == "MaxPool";
  ctx.CheckAttributes({"kernel_shape", "strides", "pads", "dilations", "auto_pad", "ceil_mode",
                       "count_include_pad", "storage_order"});
  ONNX_REQUIRE(ctx, !ctx.has_output(1), "the Indices output is not supported");
  std::vector<int64_t> in = ctx.shape(0);
  ONNX_REQUIRE(ctx, in.size() == 4, "pooling over other than 2 spatial axes is not supported, the input is "
                                        << ShapeString(in));
  Window w = ReadWindow(ctx, {in[2], in[3]}, ctx.attr_ints("kernel_shape"));
  ONNX_REQUIRE(ctx, w.dilation[0] == 1 && w.dilation[1] == 1, "dilated pooling is not supported");
  const bool ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
  const bool include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  std::string bottom = ctx.blob(0);
  if (!w.symmetric()) {
    ONNX_REQUIRE(ctx, max || include_pad,
                 "asymmetric pads with count_include_pad = 0 are not supported");
    bottom = PadAsymmetric(ctx, bottom, &in, &w, max ? -FLT_MAX : 0.f);
  }
  caffe::LayerParameter* layer = ctx.AddLayer("Pooling", {bottom}, {ctx.output_name(0)});
  caffe::PoolingParameter* p = layer->mutable_pooling_param();
  p->set_pool(max ? caffe::PoolingParameter::MAX : caffe::PoolingParameter::AVE);
  p->set_kernel_h(static_cast<int>(w.kernel[0]));
  p->set_kernel_w(static_cast<int>(w.kernel[1]));
  p->set_stride_h(static_cast<int>(w.stride[0]));
  p->set_stride_w(static_cast<int>(w.stride[1]));
  p->set_pad_h(static_cast<int>(w.pad_begin[0]));
  p->set_pad_w(static_cast<int>(w.pad_begin[1]));
  p->set_round_mode(ceil_mode ? caffe::PoolingParameter::CEIL : caffe::PoolingParameter::FLOOR);
  if (!max && !include_pad) p->set_average_excludes_padding(true);
  std::vector<int64_t> out = {in[0], in[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    const double span = double(in[2 + i] + 2 * w.pad_begin[i] - w.kernel[i]) / w.stride[i];
    ONNX_REQUIRE(ctx, std::isfinite(span) && std::fabs(span) < 1e9,
                 "the pooling window (kernel " << w.kernel[i] << ", stride " << w.stride[i]
                                               << ", pad " << w.pad_begin[i]
                                               << ") does not fit the input " << in[2 + i]);
    int64_t n = static_cast<int64_t>(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
    // As Caffe and PyTorch: the last window must start inside the input or its left pad.
    if (ceil_mode && w.pad_begin[i] > 0 && (n - 1) * w.stride[i] >= in[2 + i] + w.pad_begin[i]) --n;
    out[2 + i] = n;
  }
  ctx.SetOutput(0, out);
}
REGISTER_ONNX_OP(ImportPool, "MaxPool", "AveragePool");

void ImportGlobalPool(NodeContext& ctx) {
  const bool max = ctx.op() == "GlobalMaxPool";
  const auto& in = ctx.shape(0);
  ONNX_REQUIRE(ctx, in.size() >= 3, "the input must be N x C x spatial");
  std::vector<int64_t> out = {in[0], in[1]};
  out.resize(in.size(), 1);
  if (in.size() == 4) {
    caffe::LayerParameter* layer = ctx.AddLayer("Pooling", {ctx.blob(0)}, {ctx.output_name(0)});
    layer->mutable_pooling_param()->set_pool(max ? caffe::PoolingParameter::MAX : caffe::PoolingParameter::AVE);
    layer->mutable_pooling_param()->set_global_pooling(true);
  } else {
    caffe::LayerParameter* layer = ctx.AddLayer("Reduce", {ctx.blob(0)}, {ctx.output_name(0)});
    caffe::ReduceParameter* p = layer->mutable_reduce_param();
    p->set_operation(max ? caffe::ReduceParameter::MAX : caffe::ReduceParameter::MEAN);
    for (size_t d = 2; d < in.size(); ++d) p->add_axis(static_cast<int>(d));
  }
  ctx.SetOutput(0, out);
}
REGISTER_ONNX_OP(ImportGlobalPool, "GlobalAveragePool", "GlobalMaxPool");

// Per-channel gamma * x + beta after a normalization (axis 1).
void AddChannelAffine(NodeContext& ctx, const std::string& bottom, int gamma_input, int beta_input) {
  const int64_t channels = ctx.shape(0)[1];
  caffe::LayerParameter* scale = ctx.AddLayer("Scale", {bottom}, {ctx.output_name(0)}, "scale");
  scale->mutable_scale_param()->set_axis(1);
  scale->mutable_scale_param()->set_bias_term(true);
  ctx.AddParamBlob(scale, gamma_input, {channels});
  ctx.AddParamBlob(scale, beta_input, {channels});
}

void ImportBatchNorm(NodeContext& ctx) {
  ctx.CheckAttributes({"epsilon", "momentum", "training_mode", "spatial"});
  for (int k = 1; k < 5; ++k)
    ONNX_REQUIRE(ctx, !ctx.has_output(k), "the running-statistics outputs are not supported");
  const auto& in = ctx.shape(0);
  ONNX_REQUIRE(ctx, in.size() >= 2, "the input must be N x C x ...");
  const int64_t channels = in[1];
  const std::string normalized = ctx.TempBlob("normalized");
  caffe::LayerParameter* bn = ctx.AddLayer("BatchNorm", {ctx.blob(0)}, {normalized});
  caffe::BatchNormParameter* p = bn->mutable_batch_norm_param();
  p->set_eps(ctx.attr_float("epsilon", 1e-5f));
  p->set_moving_average_fraction(ctx.attr_float("momentum", 0.9f));
  // The mode is the import's, as module.train()/eval() is PyTorch's: the
  // node's training_mode describes how it was exported. For training it is
  // left to the phase, as in Caffe's nets: batch statistics in TRAIN, the
  // stored ones in TEST (a test net beside the training net).
  if (!ctx.options().training) p->set_use_global_stats(true);
  // The statistics are never parameters (lr_mult 0), even where an exporter
  // stored them in one initializer with an equal-valued parameter (a fresh
  // model's running mean 0 and bias 0): that would tie them together.
  ctx.AddValueBlob(bn, ctx.constant(3), {channels}, ctx.input(3).initializer);
  ctx.AddValueBlob(bn, ctx.constant(4), {channels}, ctx.input(4).initializer);
  HostTensor one;
  one.shape = {1};
  one.values = {1.0};
  ctx.AddValueBlob(bn, one);  // Caffe's moving-average scale factor
  AddChannelAffine(ctx, normalized, 1, 2);
  ctx.SetOutput(0, in);
}
REGISTER_ONNX_OP(ImportBatchNorm, "BatchNormalization");

void ImportInstanceNorm(NodeContext& ctx) {
  const auto& in = ctx.shape(0);
  ONNX_REQUIRE(ctx, in.size() >= 3, "the input must be N x C x spatial");
  const std::string normalized = ctx.TempBlob("normalized");
  caffe::LayerParameter* ln = ctx.AddLayer("LayerNorm", {ctx.blob(0)}, {normalized});
  ln->mutable_layer_norm_param()->set_axis(2);
  ln->mutable_layer_norm_param()->set_eps(ctx.attr_float("epsilon", 1e-5f));
  ln->mutable_layer_norm_param()->set_elementwise_affine(false);
  AddChannelAffine(ctx, normalized, 1, 2);
  ctx.SetOutput(0, in);
}
REGISTER_ONNX_OP(ImportInstanceNorm, "InstanceNormalization");

void ImportLayerNorm(NodeContext& ctx) {
  ctx.CheckAttributes({"axis", "epsilon", "stash_type"});
  ONNX_REQUIRE(ctx, !ctx.has_output(1) && !ctx.has_output(2), "the Mean and InvStdDev outputs are not supported");
  // The statistics' precision: the LayerNorm layer computes them in float.
  const int64_t stash_type = ctx.attr_int("stash_type", onnx::TensorProto::FLOAT);
  ONNX_REQUIRE(ctx, stash_type == onnx::TensorProto::FLOAT,
               "stash_type " << stash_type << " is not supported (the statistics are computed in float)");
  const auto& in = ctx.shape(0);
  const int axis = NormalizeAxis(ctx, ctx.attr_int("axis", -1), static_cast<int>(in.size()));
  const std::vector<int64_t> normalized(in.begin() + axis, in.end());
  caffe::LayerParameter* layer = ctx.AddLayer("LayerNorm", {ctx.blob(0)}, {ctx.output_name(0)});
  caffe::LayerNormParameter* p = layer->mutable_layer_norm_param();
  p->set_axis(axis);
  p->set_eps(ctx.attr_float("epsilon", 1e-5f));
  p->set_bias(ctx.has_input(2));
  ctx.AddParamBlob(layer, 1, normalized);
  if (ctx.has_input(2)) ctx.AddParamBlob(layer, 2, normalized);
  ctx.SetOutput(0, in);
}
REGISTER_ONNX_OP(ImportLayerNorm, "LayerNormalization");

void ImportLrn(NodeContext& ctx) {
  caffe::LayerParameter* layer = ctx.AddLayer("LRN", {ctx.blob(0)}, {ctx.output_name(0)});
  caffe::LRNParameter* p = layer->mutable_lrn_param();
  const int64_t size = ctx.attr_int("size", 0);
  ONNX_REQUIRE(ctx, size % 2 == 1, "an even size (" << size << ") is not supported");
  p->set_local_size(static_cast<int>(size));
  p->set_alpha(ctx.attr_float("alpha", 1e-4f));
  p->set_beta(ctx.attr_float("beta", 0.75f));
  p->set_k(ctx.attr_float("bias", 1.f));
  ctx.SetOutput(0, ctx.shape(0));
}
REGISTER_ONNX_OP(ImportLrn, "LRN");

// A MatMul layer for a @ b (either may be stored as the layer's operand).
void AddMatMul(NodeContext& ctx, int a, int b, bool ta, bool tb, const std::string& top) {
  caffe::LayerParameter* layer;
  if (ctx.is_weight(b) || ctx.is_weight(a)) {
    const int stored = ctx.is_weight(b) ? b : a;
    layer = ctx.AddLayer("MatMul", {ctx.blob(stored == b ? a : b)}, {top});
    *layer->mutable_matmul_param()->mutable_operand_shape() = ToBlobShape(ctx.shape(stored));
    layer->mutable_matmul_param()->set_operand_first(stored == a);
    ctx.AddParamBlob(layer, stored);
  } else {
    layer = ctx.AddLayer("MatMul", {ctx.blob(a), ctx.blob(b)}, {top});
  }
  layer->mutable_matmul_param()->set_transpose_a(ta);
  layer->mutable_matmul_param()->set_transpose_b(tb);
}

std::vector<int64_t> MatMulShape(const NodeContext& ctx, std::vector<int64_t> a, std::vector<int64_t> b,
                                 bool ta, bool tb) {
  ONNX_REQUIRE(ctx, !a.empty() && !b.empty(), "scalar operands are not allowed");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  if (ta) std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (tb) std::swap(b[b.size() - 1], b[b.size() - 2]);
  ONNX_REQUIRE(ctx, a.back() == b[b.size() - 2], "inner dimensions differ: " << ShapeString(a) << " @ " << ShapeString(b));
  std::vector<int64_t> batch = BroadcastShapes(ctx, std::vector<int64_t>(a.begin(), a.end() - 2),
                                               std::vector<int64_t>(b.begin(), b.end() - 2));
  if (!a_vec) batch.push_back(a[a.size() - 2]);
  if (!b_vec) batch.push_back(b.back());
  return batch;
}

// A @ B of constants (numpy's matmul: batch axes broadcast, a 1-d operand
// promoted and its axis dropped), on the host: rotary tables from their
// frequencies and positions.
HostTensor HostMatMul(const NodeContext& ctx, const HostTensor& a, const HostTensor& b,
                      const std::vector<int64_t>& out) {
  std::vector<int64_t> sa = a.shape, sb = b.shape;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  const std::vector<int64_t> batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  const std::vector<int64_t> batch = BroadcastShapes(ctx, batch_a, batch_b);
  // The flat index of batch entry `flat` in an operand with batch axes `dims`
  // (right-aligned, broadcast where 1).
  auto offset = [&](const std::vector<int64_t>& dims, int64_t flat) {
    int64_t index = 0, stride = 1;
    for (int d = static_cast<int>(batch.size()) - 1, e = static_cast<int>(dims.size()) - 1; d >= 0; --d, --e) {
      const int64_t coord = flat % batch[d];
      flat /= batch[d];
      if (e >= 0) {
        index += (dims[e] == 1 ? 0 : coord) * stride;
        stride *= dims[e];
      }
    }
    return index;
  };
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  HostTensor c;
  c.type = a.type;
  c.shape = out;
  c.values.assign(static_cast<size_t>(batches * m * n), 0.0);
  for (int64_t t = 0; t < batches; ++t) {
    const double* pa = a.values.data() + offset(batch_a, t) * m * k;
    const double* pb = b.values.data() + offset(batch_b, t) * k * n;
    double* pc = c.values.data() + t * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t q = 0; q < k; ++q) sum += pa[i * k + q] * pb[q * n + j];
        pc[i * n + j] = sum;
      }
  }
  return c;
}

void ImportMatMul(NodeContext& ctx) {
  const auto out = MatMulShape(ctx, ctx.shape(0), ctx.shape(1), false, false);
  if (ctx.is_constant(0) && ctx.is_constant(1))
    return ctx.SetConstantOutput(0, HostMatMul(ctx, ctx.constant(0), ctx.constant(1), out));
  // x @ W with a stored 2-d W: an InnerProduct over the last axis (its
  // transpose mode keeps W's K x N layout).
  if (ctx.is_weight(1) && !ctx.is_weight(0) && ctx.rank(1) == 2 && ctx.rank(0) >= 2) {
    caffe::LayerParameter* layer = ctx.AddLayer("InnerProduct", {ctx.blob(0)}, {ctx.output_name(0)});
    caffe::InnerProductParameter* p = layer->mutable_inner_product_param();
    p->set_num_output(static_cast<int>(ctx.shape(1)[1]));
    p->set_axis(ctx.rank(0) - 1);
    p->set_bias_term(false);
    const Value& w = ctx.input(1);
    if (!w.transposed_initializer.empty()) {
      // x @ W^T of a stored N x K weight: Caffe's own layout.
      ctx.AddValueBlob(layer, HostTranspose(w.tensor, {1, 0}), {}, w.transposed_initializer, true);
    } else {
      p->set_transpose(true);
      ctx.AddParamBlob(layer, 1);
    }
    return ctx.SetOutput(0, out);
  }
  ONNX_REQUIRE(ctx, !(ctx.is_weight(0) && ctx.is_weight(1)),
               "a product of two constants is not supported");
  // A stored operand and an inner dimension of 1: an outer product, a
  // broadcast multiply, exact and free of the position mixing a MatMul of
  // two activations means (rotary angles, frequencies times run-time
  // positions, in a decoding import). Two activations stay a MatMul, which
  // the attention fusion looks for (P V of a single key has K = 1 too).
  if ((ctx.is_weight(0) || ctx.is_weight(1)) && ctx.rank(0) >= 2 && ctx.rank(1) >= 2 &&
      ctx.shape(0).back() == 1) {
    ctx.AddLayer("BinaryOp", {ctx.blob(0), ctx.blob(1)}, {ctx.output_name(0)})
        ->mutable_binary_op_param()->set_operation(caffe::BinaryOpParameter::MUL);
    return ctx.SetOutput(0, out);
  }
  AddMatMul(ctx, 0, 1, false, false, ctx.output_name(0));
  ctx.SetOutput(0, out);
}
REGISTER_ONNX_OP(ImportMatMul, "MatMul");

void ImportGemm(NodeContext& ctx) {
  const float alpha = ctx.attr_float("alpha", 1.f), beta = ctx.attr_float("beta", 1.f);
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  ONNX_REQUIRE(ctx, ctx.rank(0) == 2 && ctx.rank(1) == 2, "A and B must be matrices");
  const auto out = MatMulShape(ctx, ctx.shape(0), ctx.shape(1), ta, tb);
  const int64_t n = out[1];
  ONNX_REQUIRE(ctx, !ctx.has_runtime_dims(0) || (!ta && !ctx.runtime_dims(0)[1]),
               "sizes that follow the data other than A's rows are not supported");
  const bool bias_vector = ctx.has_input(2) && ctx.is_weight(2) && ShapeCount(ctx.shape(2)) == n &&
                           ctx.shape(2).back() == n;
  // The usual fully connected layer: an InnerProduct with B as its weights.
  if (!ta && ctx.is_weight(1) && !ctx.is_weight(0) && alpha == 1.f &&
      (!ctx.has_input(2) || (bias_vector && beta == 1.f))) {
    caffe::LayerParameter* layer = ctx.AddLayer("InnerProduct", {ctx.blob(0)}, {ctx.output_name(0)});
    caffe::InnerProductParameter* p = layer->mutable_inner_product_param();
    p->set_num_output(static_cast<int>(n));
    p->set_transpose(!tb);  // Caffe's weights are N x K; B is K x N unless transB
    p->set_bias_term(ctx.has_input(2));
    ctx.AddParamBlob(layer, 1);
    if (ctx.has_input(2)) ctx.AddParamBlob(layer, 2, {n});
    ctx.SetOutput(0, out);
    // Rows that follow the data (a detector's regions) stay rows.
    if (ctx.has_runtime_dims(0)) ctx.SetRuntimeDims(0, {ctx.runtime_dims(0)[0], false});
    return;
  }
  ONNX_REQUIRE(ctx, !ctx.has_runtime_dims(0) && !ctx.has_runtime_dims(1),
               "sizes that follow the data are not supported here except as the rows of a fully "
               "connected layer");
  // General form: alpha * op(A) op(B) (+ beta * C).
  std::string product = ctx.has_input(2) || alpha != 1.f ? ctx.TempBlob("product") : ctx.output_name(0);
  AddMatMul(ctx, 0, 1, ta, tb, product);
  if (alpha != 1.f) {
    const std::string scaled = ctx.has_input(2) ? ctx.TempBlob("scaled") : ctx.output_name(0);
    ctx.AddLayer("Power", {product}, {scaled}, "alpha")->mutable_power_param()->set_scale(alpha);
    product = scaled;
  }
  if (ctx.has_input(2)) {
    std::string c = ctx.blob(2);
    if (beta != 1.f) {
      const std::string scaled_c = ctx.TempBlob("beta_c");
      ctx.AddLayer("Power", {c}, {scaled_c}, "beta")->mutable_power_param()->set_scale(beta);
      c = scaled_c;
    }
    ctx.AddLayer("BinaryOp", {product, c}, {ctx.output_name(0)}, "add")
        ->mutable_binary_op_param()->set_operation(caffe::BinaryOpParameter::ADD);
  }
  ctx.SetOutput(0, out);
}
REGISTER_ONNX_OP(ImportGemm, "Gemm");
ALLOW_RUNTIME_DIMS("Gemm");

void ImportSoftmax(NodeContext& ctx) {
  const bool log = ctx.op() == "LogSoftmax";
  const auto& in = ctx.shape(0);
  const int rank = static_cast<int>(in.size());
  const int axis = NormalizeAxis(ctx, ctx.attr_int("axis", ctx.opset() < 13 ? 1 : -1), rank);
  const std::string type = log ? "LogSoftmax" : "Softmax";
  ONNX_REQUIRE(ctx, !ctx.has_runtime_dims(0) || ctx.opset() >= 13 || axis == rank - 1,
               "a softmax over flattened axes whose size follows the data is not supported");
  if (ctx.opset() >= 13 || axis == rank - 1) {
    ctx.AddLayer(type, {ctx.blob(0)}, {ctx.output_name(0)})->mutable_softmax_param()->set_axis(axis);
    return ctx.SetOutput(0, in);
  }
  // Before opset 13: over the input flattened to 2-d at axis.
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= in[d];
  const std::string flat = ctx.TempBlob("flat"), soft = ctx.TempBlob("softmax");
  *ctx.AddLayer("Reshape", {ctx.blob(0)}, {flat}, "flatten")->mutable_reshape_param()->mutable_shape() =
      ToBlobShape({outer, ShapeCount(in) / outer});
  ctx.AddLayer(type, {flat}, {soft})->mutable_softmax_param()->set_axis(1);
  *ctx.AddLayer("Reshape", {soft}, {ctx.output_name(0)}, "unflatten")->mutable_reshape_param()->mutable_shape() =
      ToBlobShape(in);
  ctx.SetOutput(0, in);
}
REGISTER_ONNX_OP(ImportSoftmax, "Softmax", "LogSoftmax");
ALLOW_RUNTIME_DIMS("Softmax", "LogSoftmax");

void ImportResize(NodeContext& ctx) {
  ctx.CheckAttributes({"mode", "scales", "coordinate_transformation_mode", "nearest_mode",
                       "cubic_coeff_a", "exclude_outside", "extrapolation_value", "antialias",
                       "axes", "keep_aspect_ratio_policy"});
  const auto& in = ctx.shape(0);
  const int rank = static_cast<int>(in.size());
  ONNX_REQUIRE(ctx, rank >= 3 && rank <= 5, "the input must be N x C x 1-3 spatial axes");
  std::string mode = ctx.attr_string("mode", "nearest");
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (ctx.op() == "Upsample" || ctx.opset() < 11) {
    if (ctx.has_input(1)) {
      scales = ctx.constant(1).values;
    } else {
      for (float f : ctx.attr_floats("scales")) scales.push_back(f);
    }
  } else {
    if (ctx.has_input(2) && ctx.constant(2).count() > 0) scales = ctx.constant(2).values;
    if (ctx.has_input(3) && ctx.constant(3).count() > 0) sizes = ctx.constant(3).ints();
  }
  // Opset 18: scales or sizes for the listed axes only, the others kept.
  const std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (!axes.empty()) {
    ONNX_REQUIRE(ctx, scales.size() == axes.size() || sizes.size() == axes.size(),
                 "needs scales or sizes for each of the " << axes.size() << " axes");
    std::vector<double> full_scales(rank, 1.0);
    std::vector<int64_t> full_sizes(in);
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int axis = NormalizeAxis(ctx, axes[i], rank);
      ONNX_REQUIRE(ctx, !seen[axis], "axis " << axes[i] << " is given twice");
      seen[axis] = true;
      if (!scales.empty()) full_scales[axis] = scales[i];
      if (!sizes.empty()) full_sizes[axis] = sizes[i];
    }
    if (!scales.empty()) scales = full_scales;
    if (!sizes.empty()) sizes = full_sizes;
  }
  ONNX_REQUIRE(ctx, static_cast<int>(scales.size()) == rank || static_cast<int>(sizes.size()) == rank,
               "needs scales or sizes for every axis");
  if (!scales.empty())
    ONNX_REQUIRE(ctx, scales[0] == 1 && scales[1] == 1, "resizing the batch or channel axis is not supported");
  if (!sizes.empty())
    ONNX_REQUIRE(ctx, sizes[0] == in[0] && sizes[1] == in[1], "resizing the batch or channel axis is not supported");
  // Opset 18: sizes that keep the aspect ratio: one scale for the resized
  // axes (the smallest or largest size / input), each size rounded from it.
  const std::string policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch");
  ONNX_REQUIRE(ctx, policy == "stretch" || policy == "not_larger" || policy == "not_smaller",
               "keep_aspect_ratio_policy '" << policy << "' is not supported");
  double aspect_scale = 0;
  if (!sizes.empty() && policy != "stretch") {
    std::vector<bool> resized(rank, axes.empty());
    for (int64_t a : axes) resized[NormalizeAxis(ctx, a, rank)] = true;
    for (int d = 0; d < rank; ++d) {
      if (!resized[d]) continue;
      const double s = double(sizes[d]) / in[d];
      if (aspect_scale == 0 || (policy == "not_larger" ? s < aspect_scale : s > aspect_scale)) aspect_scale = s;
    }
    for (int d = 0; d < rank; ++d)
      if (resized[d]) sizes[d] = static_cast<int64_t>(aspect_scale * in[d] + 0.5);
    ONNX_REQUIRE(ctx, sizes[0] == in[0] && sizes[1] == in[1],
                 "resizing the batch or channel axis is not supported");
  }
  const std::string ct = ctx.attr_string("coordinate_transformation_mode",
                                         ctx.op() == "Upsample" || ctx.opset() < 11 ? "asymmetric" : "half_pixel");
  static const std::map<std::string, caffe::ResizeParameter::CoordinateTransform> transforms = {
      {"half_pixel", caffe::ResizeParameter::HALF_PIXEL},
      {"half_pixel_symmetric", caffe::ResizeParameter::HALF_PIXEL_SYMMETRIC},
      {"asymmetric", caffe::ResizeParameter::ASYMMETRIC},
      {"align_corners", caffe::ResizeParameter::ALIGN_CORNERS},
      {"pytorch_half_pixel", caffe::ResizeParameter::PYTORCH_HALF_PIXEL}};
  ONNX_REQUIRE(ctx, transforms.count(ct), "coordinate_transformation_mode '" << ct << "' is not supported");
  static const std::map<std::string, caffe::ResizeParameter::NearestMode> nearest = {
      {"round_prefer_floor", caffe::ResizeParameter::ROUND_PREFER_FLOOR},
      {"round_prefer_ceil", caffe::ResizeParameter::ROUND_PREFER_CEIL},
      {"floor", caffe::ResizeParameter::FLOOR},
      {"ceil", caffe::ResizeParameter::CEIL}};
  const std::string nm = ctx.attr_string("nearest_mode", ctx.opset() < 11 ? "floor" : "round_prefer_floor");
  ONNX_REQUIRE(ctx, nearest.count(nm), "nearest_mode '" << nm << "' is not supported");
  if (mode == "bilinear" || mode == "trilinear") mode = "linear";
  ONNX_REQUIRE(ctx, mode == "nearest" || mode == "linear", "mode '" << mode << "' is not supported");
  ONNX_REQUIRE(ctx, ctx.attr_int("exclude_outside", 0) == 0, "exclude_outside is not supported");
  std::vector<int64_t> out = in;
  for (int d = 2; d < rank; ++d)
    out[d] = !sizes.empty() ? sizes[d] : static_cast<int64_t>(std::floor(in[d] * scales[d]));
  // Opset 18: antialias widens the linear filter when downsampling, which
  // the Resize layer's two taps do not do (it changes nothing otherwise).
  if (mode == "linear" && ctx.attr_int("antialias", 0) != 0)
    for (int d = 2; d < rank; ++d) {
      const double scale = aspect_scale ? aspect_scale : !sizes.empty() ? double(out[d]) / in[d] : scales[d];
      ONNX_REQUIRE(ctx, scale >= 1, "antialias = 1 when downsampling (axis " << d << " by "
                                        << scale << ") is not supported");
    }
  caffe::LayerParameter* layer = ctx.AddLayer("Resize", {ctx.blob(0)}, {ctx.output_name(0)});
  caffe::ResizeParameter* p = layer->mutable_resize_param();
  p->set_mode(mode == "nearest" ? caffe::ResizeParameter::NEAREST : caffe::ResizeParameter::LINEAR);
  p->set_coordinate_transform(transforms.at(ct));
  p->set_nearest_mode(nearest.at(nm));
  for (int d = 2; d < rank; ++d) {
    if (!sizes.empty()) {
      p->add_size(static_cast<int>(sizes[d]));
      // Sizes that keep the aspect ratio map coordinates by the one scale.
      if (aspect_scale) p->add_scale(static_cast<float>(aspect_scale));
    } else {
      p->add_scale(static_cast<float>(scales[d]));
    }
  }
  ctx.SetOutput(0, out);
}
REGISTER_ONNX_OP(ImportResize, "Resize", "Upsample");

// The Reduce ops. The axes are an attribute, and from opset 18 (ReduceSum:
// 13) an optional input known at import time; without axes every axis is
// reduced, or none with noop_with_empty_axes (the input passes unchanged).
// Constants fold on the host; run-time tensors get a Reduce layer (plus a
// Log for ReduceLogSum, and the max-shifted sum of exponentials for
// ReduceLogSumExp). ReduceProd folds constants only.
void ImportReduceLayers(NodeContext& ctx) {
  static const std::map<std::string, caffe::ReduceParameter::Operation> ops = {
      {"ReduceSum", caffe::ReduceParameter::SUM},   {"ReduceMean", caffe::ReduceParameter::MEAN},
      {"ReduceMax", caffe::ReduceParameter::MAX},   {"ReduceMin", caffe::ReduceParameter::MIN},
      {"ReduceSumSquare", caffe::ReduceParameter::SUM_SQUARE},
      {"ReduceL1", caffe::ReduceParameter::L1},     {"ReduceL2", caffe::ReduceParameter::L2},
      {"ReduceLogSum", caffe::ReduceParameter::SUM}};
  const std::string& op = ctx.op();
  const bool axes_input = ctx.opset() >= (op == "ReduceSum" ? 13 : 18);
  ctx.CheckAttributes(axes_input ? std::set<std::string>{"keepdims", "noop_with_empty_axes"}
                                 : std::set<std::string>{"keepdims", "axes"});
  const auto& in = ctx.shape(0);
  const int rank = static_cast<int>(in.size());
  std::vector<int64_t> axes;
  if (!axes_input) {
    ONNX_REQUIRE(ctx, !ctx.has_input(1), "takes its axes as an attribute before opset "
                                             << (op == "ReduceSum" ? 13 : 18) << ", not as an input");
    axes = ctx.attr_ints("axes");
  } else if (ctx.has_input(1)) {
    axes = ctx.constant(1).ints();
  }
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  if (axes.empty() && axes_input && ctx.attr_int("noop_with_empty_axes", 0)) {
    if (ctx.is_constant(0)) return ctx.SetConstantOutput(0, ctx.constant(0));
    return ctx.SetOutputToInput(0, 0);
  }
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) reduced[NormalizeAxis(ctx, a, rank)] = true;
  std::vector<int64_t> out;
  for (int d = 0; d < rank; ++d)
    if (!reduced[d]) out.push_back(in[d]); else if (keepdims) out.push_back(1);
  if (ctx.is_constant(0)) {
    // Fold: each input element into its output element, then finish.
    const HostTensor& t = ctx.constant(0);
    std::vector<int64_t> kept(rank);  // the input's strides onto the output, 0 on reduced axes
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      kept[d] = reduced[d] ? 0 : stride;
      if (!reduced[d]) stride *= in[d];
    }
    const bool max = op == "ReduceMax", min = op == "ReduceMin", prod = op == "ReduceProd";
    HostTensor r;
    r.type = t.type;
    r.shape = out;
    r.values.assign(HostValueCount(out), max ? -INFINITY : min ? INFINITY : prod ? 1.0 : 0.0);
    int64_t n = 1;
    for (int d = 0; d < rank; ++d)
      if (reduced[d]) n *= in[d];
    std::vector<int64_t> index(rank, 0);
    for (size_t i = 0; i < t.values.size(); ++i) {
      int64_t o = 0;
      for (int d = 0; d < rank; ++d) o += index[d] * kept[d];
      const double x = t.values[i];
      double& acc = r.values[o];
      if (max) acc = std::max(acc, x);
      else if (min) acc = std::min(acc, x);
      else if (prod) acc *= x;
      else if (op == "ReduceSumSquare" || op == "ReduceL2") acc += x * x;
      else if (op == "ReduceL1") acc += std::fabs(x);
      else if (op == "ReduceLogSumExp") acc += std::exp(x);
      else acc += x;
      for (int d = rank - 1; d >= 0 && ++index[d] == in[d]; --d) index[d] = 0;
    }
    for (double& v : r.values) {
      if (op == "ReduceMean") v /= static_cast<double>(n);
      else if (op == "ReduceL2") v = std::sqrt(v);
      else if (op == "ReduceLogSum" || op == "ReduceLogSumExp") v = std::log(v);
    }
    if (r.is_integer())
      for (double& v : r.values) v = std::trunc(v);
    return ctx.SetConstantOutput(0, r);
  }
  if (op == "ReduceProd" && !ctx.input(0).shape_of.empty() &&
      std::all_of(reduced.begin(), reduced.end(), [](bool r) { return r; }) && !keepdims) {
    // The product of a run-time Shape: that tensor's element count.
    caffe::LayerParameter* layer = ctx.AddLayer(
        "Shape", {ctx.MaterializeNamed(ctx.input(0).shape_of)}, {ctx.output_name(0)});
    layer->mutable_shape_param()->set_size(true);
    ctx.SetOutput(0, {});
    ctx.MarkOutputInteger(0, true);
    return;
  }
  ONNX_REQUIRE(ctx, op != "ReduceProd", "ReduceProd of a run-time tensor is not supported");
  for (int64_t d : in)
    ONNX_REQUIRE(ctx, d > 0, "the input has shape " << ShapeString(in)
                                 << ": empty (zero-sized) tensors are not supported");
  auto add_reduce = [&](const std::string& bottom, const std::string& top,
                        caffe::ReduceParameter::Operation operation, bool keep,
                        const std::string& suffix) {
    caffe::LayerParameter* layer = ctx.AddLayer("Reduce", {bottom}, {top}, suffix);
    caffe::ReduceParameter* p = layer->mutable_reduce_param();
    p->set_operation(operation);
    p->set_keepdims(keep);
    for (int d = 0; d < rank; ++d)
      if (reduced[d]) p->add_axis(d);
  };
  if (op == "ReduceLogSum") {
    const std::string sum = ctx.TempBlob("sum");
    add_reduce(ctx.blob(0), sum, caffe::ReduceParameter::SUM, keepdims, "sum");
    ctx.AddLayer("Log", {sum}, {ctx.output_name(0)}, "log");
    return ctx.SetOutput(0, out);
  }
  if (op == "ReduceLogSumExp") {
    // max + log(sum(exp(x - max))), without overflow for large x.
    const std::string max = ctx.TempBlob("max"), shifted = ctx.TempBlob("shifted"),
                      exp = ctx.TempBlob("exp"), sum = ctx.TempBlob("sum"), log = ctx.TempBlob("log");
    add_reduce(ctx.blob(0), max, caffe::ReduceParameter::MAX, true, "max");
    ctx.AddLayer("BinaryOp", {ctx.blob(0), max}, {shifted}, "shift")
        ->mutable_binary_op_param()->set_operation(caffe::BinaryOpParameter::SUB);
    ctx.AddLayer("Exp", {shifted}, {exp}, "exp");
    add_reduce(exp, sum, caffe::ReduceParameter::SUM, true, "sum");
    ctx.AddLayer("Log", {sum}, {log}, "log");
    const std::string total = keepdims ? ctx.output_name(0) : ctx.TempBlob("keepdims");
    ctx.AddLayer("Eltwise", {log, max}, {total}, "add");
    if (!keepdims)
      *ctx.AddLayer("Reshape", {total}, {ctx.output_name(0)}, "squeeze")
           ->mutable_reshape_param()->mutable_shape() = ToBlobShape(out);
    return ctx.SetOutput(0, out);
  }
  add_reduce(ctx.blob(0), ctx.output_name(0), ops.at(op), keepdims, "");
  ctx.SetOutput(0, out);
}
// An input sized at run time: the Reduce layer follows it, and the output
// keeps the run-time flags of the axes it keeps.
void ImportReduce(NodeContext& ctx) {
  ImportReduceLayers(ctx);
  if (!ctx.has_runtime_dims(0) || !ctx.has_output(0) || ctx.output_value(0).constant) return;
  const int rank = ctx.rank(0);
  const bool axes_input = ctx.opset() >= (ctx.op() == "ReduceSum" ? 13 : 18);
  std::vector<int64_t> axes;
  if (!axes_input) axes = ctx.attr_ints("axes");
  else if (ctx.has_input(1)) axes = ctx.constant(1).ints();
  if (axes.empty() && axes_input && ctx.attr_int("noop_with_empty_axes", 0)) return;
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) reduced[NormalizeAxis(ctx, a, rank)] = true;
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const std::vector<bool> in_runtime = ctx.runtime_dims(0);
  std::vector<bool> runtime;
  for (int d = 0; d < rank; ++d)
    if (!reduced[d]) runtime.push_back(in_runtime[d]); else if (keepdims) runtime.push_back(false);
  ctx.SetRuntimeDims(0, runtime);
}
ALLOW_RUNTIME_DIMS("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin");
REGISTER_ONNX_OP(ImportReduce, "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare",
                 "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceProd");

}  // namespace
}  // namespace onnx_import
}  // namespace dlcaffe
