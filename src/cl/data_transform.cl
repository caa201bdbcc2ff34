// Caffe's DataTransformer on the device: top = (pixel - mean) * scale, with
// each image's crop window and left-right mirror taken from the batch.
//
// `batch` holds one uploaded HostImageBatch (include/dlcaffe/data/image_batch.hpp):
// int32 {h_off, w_off, mirror} per image at byte 0, then labels, then the
// uncropped pixels at byte `pixels_offset`.
//
// Variants: PIXEL_FLOAT (0: uint8 pixels, 1: float pixels) and MEAN_MODE
// (0: none, 1: one value per channel in `mean`, 2: a C×H×W mean image in
// `mean`, indexed at the source pixel as in Caffe).

#ifndef PIXEL_FLOAT
#define PIXEL_FLOAT 0
#endif
#ifndef MEAN_MODE
#define MEAN_MODE 0
#endif

// One work-item per output element of the num × channels × crop_h × crop_w top.
__kernel void data_transform(const int count, const int channels, const int height,
                             const int width, const int crop_h, const int crop_w,
                             const int pixels_offset, const float scale,
                             __global const uchar* batch, __global const float* mean,
                             __global float* top) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int w = i % crop_w;
  int t = i / crop_w;
  const int h = t % crop_h;
  t /= crop_h;
  const int c = t % channels;
  const int n = t / channels;

  __global const int* params = (__global const int*)batch;
  const int h_off = params[3 * n];
  const int w_off = params[3 * n + 1];
  const int mirror = params[3 * n + 2];
  const int source_w = mirror ? crop_w - 1 - w : w;
  const int source = (c * height + h_off + h) * width + w_off + source_w;
  const int image = n * channels * height * width;

#if PIXEL_FLOAT
  float v = ((__global const float*)(batch + pixels_offset))[image + source];
#else
  float v = (float)batch[pixels_offset + image + source];
#endif
#if MEAN_MODE == 1
  v -= mean[c];
#elif MEAN_MODE == 2
  v -= mean[source];
#endif
  top[i] = v * scale;
}
