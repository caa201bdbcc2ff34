// Resize (dlcaffe "Resize", resize_param): ONNX Resize (opset 11-19; also
// what Upsample opset 9 means) of the spatial axes (2 and up; 1, 2 or 3 of
// them) of an N x C x ... blob, NEAREST or (separable bi/tri-)LINEAR.
//
// Output sizes: `size` (one per spatial axis; with `scale` as well, the
// sizes are the output's and the scales map coordinates), or `scale` (one
// per spatial axis): out = floor(in * scale), the product in double
// precision as ONNX's reference implementation (and the ONNX importer)
// computes it; onnxruntime multiplies in float, which differs where
// in * scale falls just below a whole number (5 * 1.4f: 6 here, 7 there).
// Each output index o of an axis maps to an input coordinate x:
//   HALF_PIXEL          (o + 0.5) / scale - 0.5
//   PYTORCH_HALF_PIXEL  the same, but 0 where out == 1
//   ASYMMETRIC          o / scale
//   ALIGN_CORNERS       o * (in - 1) / (in * scale - 1), 0 where that is <= 1 (the
//                       unrounded resized length, as ONNX's reference computes it)
//   HALF_PIXEL_SYMMETRIC  HALF_PIXEL shifted by in / 2 * (1 - out / (in * scale)),
//                       which centres the output when out is rounded (ONNX opset 19)
// where scale is the given one, or out / in when only `size` is given (ONNX;
// both are given for ONNX's keep_aspect_ratio_policy, whose sizes are
// rounded from one scale that then maps the coordinates).
// NEAREST rounds x by nearest_mode (ROUND_PREFER_FLOOR: halves go down,
// ROUND_PREFER_CEIL: up, FLOOR, CEIL), then clamps to [0, in - 1]. LINEAR
// clamps x to [0, in - 1] (the ONNX reference's edge padding, onnxruntime's
// and PyTorch's clamp) and weighs in[floor(x)] and in[floor(x) + 1] by
// their distances.
//
// The per-axis index and weight tables are computed here on the host (in
// double precision) at Reshape; src/cl/resize.cl describes the kernels.
// Backward writes the input's gradient as a gather over the outputs that
// read each input (deterministic, no atomics).
#include <cmath>
#include <string>

#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class ResizeLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Resize"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ResizeParameter& p = param_.resize_param();
    DLC_REQUIRE(p.size_size() > 0 || p.scale_size() > 0,
                Where() << "resize_param needs `size` or `scale` (one per spatial axis), or both "
                           "(the sizes, and the scales that map coordinates)");
    DLC_REQUIRE(p.size_size() == 0 || p.scale_size() == 0 || p.size_size() == p.scale_size(),
                Where() << "resize_param has " << p.size_size() << " sizes but "
                        << p.scale_size() << " scales");
    for (int i = 0; i < p.scale_size(); ++i)
      DLC_REQUIRE(std::isfinite(p.scale(i)) && p.scale(i) > 0.f,
                  Where() << "scale " << i << " is " << p.scale(i) << "; it must be positive");
    for (int i = 0; i < p.size_size(); ++i)
      DLC_REQUIRE(p.size(i) > 0 && p.size(i) <= (1u << 30),
                  Where() << "size " << i << " is " << p.size(i) << "; it must be positive");
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ResizeParameter& p = param_.resize_param();
    const Blob& x = *bottom[0];
    const int spatial = x.num_axes() - 2;
    DLC_REQUIRE(spatial >= 1 && spatial <= 3,
                Where() << "resizes 1 to 3 spatial axes of N x C x ...; the input "
                        << x.shape_string() << " has " << std::max(spatial, 0));
    const int given = p.size_size() > 0 ? p.size_size() : p.scale_size();
    DLC_REQUIRE(given == spatial,
                Where() << (p.size_size() > 0 ? "size" : "scale") << " has " << given
                        << " value(s) for the " << spatial << " spatial axes of the input "
                        << x.shape_string());
    spatial_ = spatial;
    std::vector<int> top_shape = x.shape();
    // Axes d, h, w of the kernels; missing leading ones are 1.
    in_ = {1, 1, 1};
    out_ = {1, 1, 1};
    std::vector<double> scale(3, 1.0);
    for (int s = 0; s < spatial; ++s) {
      const int axis = 3 - spatial + s;
      const int in = x.shape(2 + s);
      int out;
      if (p.size_size() > 0) {
        out = static_cast<int>(p.size(s));
        scale[axis] = p.scale_size() > 0 ? p.scale(s) : in > 0 ? double(out) / in : 1.0;
      } else {
        out = static_cast<int>(std::floor(in * static_cast<double>(p.scale(s))));
        scale[axis] = p.scale(s);
        DLC_REQUIRE(in == 0 || out > 0,
                    Where() << "scale " << p.scale(s) << " leaves spatial axis " << s
                            << " of the input " << x.shape_string() << " empty");
      }
      in_[axis] = in;
      out_[axis] = out;
      top_shape[2 + s] = out;
    }
    top[0]->Reshape(top_shape);
    if (x.count() == 0 || top[0]->count() == 0) return;
    // A Net reshapes before every forward: rebuild only what changed.
    std::vector<double> key(in_.begin(), in_.end());
    key.insert(key.end(), out_.begin(), out_.end());
    key.insert(key.end(), scale.begin(), scale.end());
    if (key == table_key_ && int_table_) return;
    BuildTables(scale);
    table_key_ = key;
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int count = top[0]->count();
    if (count == 0 || bottom[0]->count() == 0) return;
    ctx_->Launch1D(ctx_->Kernel("resize.cl", Options(), "resize_forward"), count, count, in_[0],
                   in_[1], in_[2], out_[0], out_[1], out_[2], bottom[0]->data(), top[0]->data(),
                   int_table_->mem(), float_table_->mem());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int count = bottom[0]->count();
    if (count == 0) return;
    if (top[0]->count() == 0) {
      bottom[0]->SetDiff(0.f);
      return;
    }
    ctx_->Launch1D(ctx_->Kernel("resize.cl", Options(), "resize_backward"), count, count, in_[0],
                   in_[1], in_[2], out_[0], out_[1], out_[2], top[0]->diff(), bottom[0]->diff(),
                   int_table_->mem(), float_table_->mem());
  }

 private:
  std::string Options() const {
    const bool linear = param_.resize_param().mode() == caffe::ResizeParameter::LINEAR;
    return std::string("-DLINEAR=") + (linear ? "1" : "0") +
           " -DSPATIAL=" + std::to_string(spatial_);
  }

  // The input coordinate of output index o along an axis (ONNX's
  // coordinate_transformation_mode).
  double SourceCoordinate(int o, int in, int out, double scale) const {
    switch (param_.resize_param().coordinate_transform()) {
      case caffe::ResizeParameter::HALF_PIXEL:
        return (o + 0.5) / scale - 0.5;
      case caffe::ResizeParameter::HALF_PIXEL_SYMMETRIC:
        return in / 2.0 * (1 - out / (in * scale)) + (o + 0.5) / scale - 0.5;
      case caffe::ResizeParameter::PYTORCH_HALF_PIXEL:
        return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
      case caffe::ResizeParameter::ASYMMETRIC:
        return o / scale;
      case caffe::ResizeParameter::ALIGN_CORNERS: {
        // ONNX's resized length is in * scale, unrounded when a scale was
        // given (it is `out` when a size was: scale = out / in).
        const double resized = in * scale;
        return resized > 1 ? o * double(in - 1) / (resized - 1) : 0.0;
      }
    }
    DLC_FAIL(Where() << "unknown coordinate_transform "
                     << param_.resize_param().coordinate_transform());
  }

  // ONNX's nearest_mode.
  double RoundNearest(double x) const {
    const double down = std::floor(x);
    switch (param_.resize_param().nearest_mode()) {
      case caffe::ResizeParameter::ROUND_PREFER_FLOOR:
        return x == down + 0.5 ? down : std::round(x);
      case caffe::ResizeParameter::ROUND_PREFER_CEIL:
        return x == down + 0.5 ? down + 1.0 : std::round(x);
      case caffe::ResizeParameter::FLOOR:
        return down;
      case caffe::ResizeParameter::CEIL:
        return std::ceil(x);
    }
    DLC_FAIL(Where() << "unknown nearest_mode " << param_.resize_param().nearest_mode());
  }

  // The tables of src/cl/resize.cl for the three axes d, h, w.
  void BuildTables(const std::vector<double>& scale) {
    const bool linear = param_.resize_param().mode() == caffe::ResizeParameter::LINEAR;
    std::vector<int> i0_all, i1_all, ranges;
    std::vector<float> lambdas;
    for (int a = 0; a < 3; ++a) {
      const int in = in_[a], out = out_[a];
      std::vector<int> i0(out), i1(out);
      for (int o = 0; o < out; ++o) {
        const double x = SourceCoordinate(o, in, out, scale[a]);
        double l = 0.0;
        if (linear) {
          const double c = std::min(std::max(x, 0.0), double(in - 1));
          i0[o] = static_cast<int>(std::floor(c));
          i1[o] = std::min(i0[o] + 1, in - 1);
          l = c - i0[o];
        } else {
          const double r = RoundNearest(x);
          i0[o] = static_cast<int>(std::min(std::max(r, 0.0), double(in - 1)));
          i1[o] = i0[o];
        }
        lambdas.push_back(static_cast<float>(l));
      }
      // The outputs that read input j: i0 or i1 equal to j, a contiguous run.
      std::vector<int> begin(in, out), end(in, 0);
      for (int o = 0; o < out; ++o)
        for (int j : {i0[o], i1[o]}) {
          begin[j] = std::min(begin[j], o);
          end[j] = std::max(end[j], o + 1);
        }
      for (int j = 0; j < in; ++j)
        if (begin[j] >= end[j]) begin[j] = end[j] = 0;
      i0_all.insert(i0_all.end(), i0.begin(), i0.end());
      i0_all.insert(i0_all.end(), i1.begin(), i1.end());
      ranges.insert(ranges.end(), begin.begin(), begin.end());
      ranges.insert(ranges.end(), end.begin(), end.end());
    }
    std::vector<int> ints = i0_all;
    ints.insert(ints.end(), ranges.begin(), ranges.end());
    int_table_ = ctx_->Allocate(ints.size() * sizeof(int));
    ctx_->Write(int_table_->mem(), 0, ints.size() * sizeof(int), ints.data());
    float_table_ = ctx_->Allocate(lambdas.size() * sizeof(float));
    ctx_->Write(float_table_->mem(), 0, lambdas.size() * sizeof(float), lambdas.data());
  }

  int spatial_ = 2;
  std::vector<int> in_, out_;  // d, h, w
  BufferPtr int_table_, float_table_;
  std::vector<double> table_key_;  // the sizes and scales of the tables
};

REGISTER_LAYER_CLASS(Resize);

}  // namespace dlcaffe
