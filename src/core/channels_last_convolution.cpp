#include "core/channels_last_convolution.hpp"

#include <algorithm>
#include <limits>

#include "core/matrix_engine.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {

constexpr size_t kTile = 32, kTileRows = 8;  // TILE, TILE_ROWS in channels_last.cl

size_t RoundUpTo(size_t x, size_t m) { return (x + m - 1) / m * m; }

// The filters' type for products in `math`: the blobs' 16-bit type where the
// tensor cores would round them to it anyway (the same product; the
// pipeline streams only operands of its own type), else float.
StorageType FilterType(const Context& ctx, const LayerChoices& choices, MatrixMath math,
                       StorageType storage) {
  return storage != StorageType::kFloat32 && MmaRoundsTo(ctx, choices, math, storage)
             ? storage
             : StorageType::kFloat32;
}

// Caffe's filters [outputs][inputs][kh][kw] as [o][ki][kj][c], c < padded
// (zero past inputs), or, flipped, [c][ki][kj][o] turned 180 degrees, in
// `type`.
BufferPtr ReorderedFilters(Context& ctx, cl_mem weights, int outputs, int inputs, int padded,
                           int kh, int kw, bool flipped, StorageType type) {
  const int count = outputs * (flipped ? inputs : padded) * kh * kw;
  BufferPtr out = ctx.Allocate(StorageBytes(type) * size_t(count));
  ctx.Launch1D(ctx.Kernel("channels_last.cl", StorageOption("DATA_TYPE", type),
                          "channels_last_filters"),
               count, count, outputs, inputs, padded, kh, kw, flipped ? 1 : 0, weights,
               out->mem());
  return out;
}

// Channels-last windows over NHWC images of channels x height x width.
ConvolutionWindow Windows(int channels, int height, int width, int kh, int kw, int pad_h,
                          int pad_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
                          int out_h, int out_w) {
  ConvolutionWindow w;
  w.height = height;
  w.width = width;
  w.kernel_h = kh;
  w.kernel_w = kw;
  w.pad_h = pad_h;
  w.pad_w = pad_w;
  w.stride_h = stride_h;
  w.stride_w = stride_w;
  w.dilation_h = dilation_h;
  w.dilation_w = dilation_w;
  w.out_h = out_h;
  w.out_w = out_w;
  w.image_floats = channels * height * width;
  w.nhwc_channels = channels;
  return w;
}

// The forward product's windows: over the bottom's channels-last copy.
ConvolutionWindow BottomWindows(const ChannelsLastConvolution& c) {
  return Windows(c.padded_channels(), c.height, c.width, c.kernel_h, c.kernel_w, c.pad_h, c.pad_w,
                 c.stride_h, c.stride_w, c.dilation_h, c.dilation_w, c.out_h, c.out_w);
}

// C (NCHW, `c_channels` x `c_area` per image, =) = reordered filters
// (M x K, in FilterType) times the windows over channels-last images.
void FiltersTimesWindows(Context& ctx, const LayerChoices& choices, MatrixMath math,
                         cl_mem filters, cl_mem images_nhwc, const ConvolutionWindow& window,
                         int images, int c_channels, StorageType storage, cl_mem c,
                         const ChannelsLastConvolution::Epilogue& epilogue) {
  const int c_area = window.out_h * window.out_w;
  GemmArgs a;
  a.math = math;
  a.choices = choices;
  a.M = c_channels;
  a.N = images * c_area;
  a.K = window.kernel_h * window.kernel_w * window.nhwc_channels;
  a.A = filters;
  a.a_type = FilterType(ctx, choices, math, storage);
  a.B = images_nhwc;
  a.b_type = storage;
  a.b_window = window;
  a.C = c;
  a.c_type = storage;
  a.ldc = a.c_group = c_area;
  a.c_image = c_channels * c_area;
  a.row_scale = epilogue.row_scale;
  a.bias = epilogue.bias;
  a.relu = epilogue.relu;
  Gemm(ctx, a);
}

}  // namespace

int ChannelsLastConvolution::padded_channels() const {
  const int chunk = MmaPipelineChunk(storage);
  return (channels + chunk - 1) / chunk * chunk;
}

BufferPtr ChannelsLastConvolution::ToChannelsLast(Context& ctx, cl_mem nchw, int images,
                                                  int channels, int area, StorageType storage,
                                                  int padded) {
  padded = std::max(padded, channels);
  DLC_REQUIRE(1LL * images * padded * area <= std::numeric_limits<int>::max(),
              "channels-last copy of " << images << " x " << padded << " x " << area
                                       << " values: past 32-bit indexing");
  BufferPtr out = ctx.Allocate(StorageBytes(storage) * size_t(images) * padded * area);
  ctx.Launch(ctx.Kernel("channels_last.cl", StorageOption("DATA_TYPE", storage),
                        "to_channels_last"),
             NDRange(RoundUpTo(area, kTile), RoundUpTo(padded, kTile) / kTile * kTileRows,
                     images),
             NDRange(kTile, kTileRows, 1), channels, padded, area, nchw, 0, out->mem());
  return out;
}

BufferPtr ChannelsLastConvolution::Filters(Context& ctx, MatrixMath math, cl_mem weights,
                                           bool flipped) const {
  return ReorderedFilters(ctx, weights, outputs, channels, padded_channels(), kernel_h, kernel_w,
                          flipped, FilterType(ctx, choices, math, storage));
}

BufferPtr ChannelsLastConvolution::BottomToChannelsLast(Context& ctx, cl_mem bottom) const {
  return ToChannelsLast(ctx, bottom, images, channels, height * width, storage,
                        padded_channels());
}

void ChannelsLastConvolution::Forward(Context& ctx, MatrixMath math, cl_mem bottom,
                                      cl_mem filters, const Epilogue& epilogue,
                                      cl_mem top) const {
  const BufferPtr x = BottomToChannelsLast(ctx, bottom);
  FiltersTimesWindows(ctx, choices, math, filters, x->mem(), BottomWindows(*this), images,
                      outputs, storage, top, epilogue);
}

void ChannelsLastConvolution::AccumulateWeightGradient(Context& ctx, MatrixMath math,
                                                       cl_mem bottom_nhwc, cl_mem top_diff_nhwc,
                                                       cl_mem weight_diff) const {
  // [o][ki][kj][c] float sums, then added into Caffe's [o][c][ki][kj].
  const int padded = padded_channels();
  BufferPtr sums = ctx.Allocate(sizeof(float) * size_t(outputs) * kernel_h * kernel_w * padded);
  GemmArgs a;
  a.math = math;
  a.choices = choices;
  a.trans_a = Transpose::kYes;  // the top diff's copy: positions x outputs
  a.trans_b = Transpose::kYes;  // windows^T: positions x (ki, kj, c)
  a.M = outputs;
  a.N = kernel_h * kernel_w * padded;
  a.K = images * out_h * out_w;
  a.A = top_diff_nhwc;
  a.a_type = storage;
  a.lda = outputs;
  a.B = bottom_nhwc;
  a.b_type = storage;
  a.b_window = BottomWindows(*this);
  a.C = sums->mem();
  Gemm(ctx, a);
  const int count = outputs * channels * kernel_h * kernel_w;
  ctx.Launch1D(ctx.Kernel("channels_last.cl", "", "channels_last_filter_diff_add"), count, count,
               channels, padded, kernel_h, kernel_w, sums->mem(), weight_diff);
}

void ChannelsLastConvolution::DataGradient(Context& ctx, MatrixMath math, cl_mem top_diff_nhwc,
                                           cl_mem flipped_filters,
                                           cl_mem bottom_diff) const {
  DLC_REQUIRE(stride_h == 1 && stride_w == 1,
              "channels-last data gradient of a strided convolution");
  // The top diff padded by (k - 1) * dilation - pad: every input position's
  // window covers the outputs its value reached.
  FiltersTimesWindows(ctx, choices, math, flipped_filters, top_diff_nhwc,
                      Windows(outputs, out_h, out_w, kernel_h, kernel_w,
                              (kernel_h - 1) * dilation_h - pad_h,
                              (kernel_w - 1) * dilation_w - pad_w, 1, 1, dilation_h, dilation_w,
                              height, width),
                      images, channels, storage, bottom_diff, Epilogue());
}

}  // namespace dlcaffe
