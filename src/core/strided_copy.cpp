#include "core/strided_copy.hpp"

#include <glog/logging.h>

#include "core/storage_option.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {

// The kernel's view argument, laid out as strided_copy.cl's strided_view.
struct KernelView {
  cl_int size[kMaxStridedAxes];
  cl_int stride[kMaxStridedAxes];
  cl_int base;
};

// The most elements, up to 16 bytes' worth, that one work-item can move as
// one vector: the view's last axis runs contiguously (stride 1) in whole
// vectors, and every vector starts on a vector boundary (the base and the
// other axes' strides multiples of it). 1 where it does not.
int VectorWidth(const StridedView& v, StorageType type) {
  for (int width = static_cast<int>(16 / StorageBytes(type)); width > 1; width /= 2) {
    bool whole = v.stride.back() == 1 && v.size.back() % width == 0 && v.base % width == 0;
    for (size_t d = 0; whole && d + 1 < v.size.size(); ++d) whole = v.stride[d] % width == 0;
    if (whole) return width;
  }
  return 1;
}

void Launch(Context& ctx, const char* kernel_name, const StridedView& view, cl_mem src,
            cl_mem dst, StorageType type) {
  StridedView v = SimplifyStridedView(view);
  // The index arithmetic (a division per axis) costs more than the bytes
  // it moves: in vectors, the same view counts vectors instead of elements.
  const int width = VectorWidth(v, type);
  if (width > 1) {
    v.size.back() /= width;
    for (size_t d = 0; d + 1 < v.size.size(); ++d) v.stride[d] /= width;
    v.base /= width;
  }
  CHECK_LE(v.size.size(), size_t(kMaxStridedAxes)) << "strided copy of too many axes";
  KernelView k = {};
  long count = 1;
  for (size_t d = 0; d < v.size.size(); ++d) {
    k.size[d] = v.size[d];
    k.stride[d] = v.stride[d];
    count *= v.size[d];
  }
  k.base = v.base;
  if (count == 0) return;
  const std::string options =
      "-DRANK=" + std::to_string(v.size.size()) + StorageOption("DATA_TYPE", type) +
      (width > 1 ? " -DVECTOR=" + std::to_string(width) : "");
  ctx.Launch1D(ctx.Kernel("strided_copy.cl", options, kernel_name), count,
               static_cast<cl_int>(count), k, src, dst);
}

}  // namespace

StridedView SimplifyStridedView(const StridedView& view) {
  CHECK_EQ(view.size.size(), view.stride.size());
  StridedView out;
  out.base = view.base;
  for (size_t d = 0; d < view.size.size(); ++d) {
    if (view.size[d] == 1) continue;
    // Axis d continues the previous one when stepping the previous axis by
    // one equals stepping this one size[d] times.
    if (!out.size.empty() && view.size[d] != 0 &&
        out.stride.back() == long(view.stride[d]) * view.size[d]) {
      out.size.back() *= view.size[d];
      out.stride.back() = view.stride[d];
      continue;
    }
    out.size.push_back(view.size[d]);
    out.stride.push_back(view.stride[d]);
  }
  if (out.size.empty()) {
    out.size.push_back(1);
    out.stride.push_back(0);
  }
  return out;
}

void CheckStridedView(const StridedView& view, const std::string& where) {
  const size_t axes = SimplifyStridedView(view).size.size();
  DLC_REQUIRE(axes <= size_t(kMaxStridedAxes),
              where << "the copy needs " << axes << " axes after merging contiguous ones; at most "
                    << kMaxStridedAxes << " are supported");
}

void StridedGather(Context& ctx, const StridedView& view, cl_mem strided, cl_mem dense,
                   StorageType type) {
  Launch(ctx, "strided_gather", view, strided, dense, type);
}

void StridedScatter(Context& ctx, const StridedView& view, cl_mem dense, cl_mem strided,
                    StorageType type) {
  Launch(ctx, "strided_scatter", view, dense, strided, type);
}

}  // namespace dlcaffe
