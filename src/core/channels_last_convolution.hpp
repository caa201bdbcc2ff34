// Channels-last convolution: a 2-D, one-group convolution's products as
// implicit GEMMs over NHWC copies of its NCHW blobs.
//
// An NCHW window row (c, ki, kj) is a strided gather, which the GEMM fetches
// value by value; in an NHWC image the window rows (ki, kj, c) are runs of
// channels, 16-byte chunks that the tensor cores' cp.async pipeline streams
// (ConvolutionWindow::nhwc_channels). The blobs stay NCHW: each product
// copies what it reads to NHWC first (one pass over a blob, where im2col
// writes kernel_h * kernel_w copies of it) and writes NCHW through the GEMM's
// image-grouped C.
//   forward:          top (C_out x n*area_out)  = W' * windows(x')
//   weight gradient:  W_diff += (dy'^T * windows(x')^T), reordered to Caffe's
//   data gradient:    x_diff (C_in x n*area_in) = flip(W)' * windows(dy'),
//                     stride 1 only (a strided one would multiply the zeros
//                     between the top diff's values)
// where ' is the channels-last copy and W' the filters as [o][ki][kj][c].
#pragma once
#include "dlcaffe/context.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

struct ChannelsLastConvolution {
  int images = 0, channels = 0, outputs = 0;
  int height = 0, width = 0, out_h = 0, out_w = 0;
  int kernel_h = 0, kernel_w = 0, pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  StorageType storage = StorageType::kFloat32;  // the blobs'
  LayerChoices choices;  // the layer's: its products run under them

  // The channels of the bottom's copy and of the forward filters' rows: the
  // channels rounded up to whole 16-byte chunks of the storage type (a
  // first layer's 3 RGB channels are 8 in 16 bits), the rest zero, so the
  // pipeline streams every layer's windows.
  int padded_channels() const;

  // The epilogue of the forward product (GemmArgs): a per-output scale and
  // bias (float, or null), then ReLU.
  struct Epilogue {
    cl_mem row_scale = nullptr, bias = nullptr;
    bool relu = false;
  };

  // Caffe's float `weights` [o][c][ki][kj] as the forward product's filters
  // [o][ki][kj][c], or (flipped) as the data gradient's, [c][ki][kj][o] turned
  // 180 degrees; in the type products in `math` read them in. The layer keeps
  // them until the weights change (core/derived_copy.hpp).
  BufferPtr Filters(Context& ctx, MatrixMath math, cl_mem weights, bool flipped) const;

  // top = the convolution of `bottom` by `filters` (Filters, not flipped).
  void Forward(Context& ctx, MatrixMath math, cl_mem bottom, cl_mem filters,
               const Epilogue& epilogue, cl_mem top) const;
  // weight_diff += the gradient, from the bottom and the top diff as
  // channels-last copies (ToChannelsLast).
  void AccumulateWeightGradient(Context& ctx, MatrixMath math, cl_mem bottom_nhwc,
                                cl_mem top_diff_nhwc, cl_mem weight_diff) const;
  // bottom_diff (=) the data gradient (stride 1), from the top diff's copy
  // and the flipped filters (Filters).
  void DataGradient(Context& ctx, MatrixMath math, cl_mem top_diff_nhwc, cl_mem flipped_filters,
                    cl_mem bottom_diff) const;

  // An NHWC copy of `images` NCHW images of `channels` x `area` values
  // stored as `storage`, its channels padded with zeros to `padded` (0 or
  // `channels`: none).
  static BufferPtr ToChannelsLast(Context& ctx, cl_mem nchw, int images, int channels, int area,
                                  StorageType storage, int padded = 0);
  // The bottom's copy, of padded_channels() channels.
  BufferPtr BottomToChannelsLast(Context& ctx, cl_mem bottom) const;
};

}  // namespace dlcaffe
