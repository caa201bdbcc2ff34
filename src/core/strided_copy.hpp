// Copies between a dense blob and a strided view of another buffer, shared by
// the layers that move elements without computing on them (Permute,
// StridedSlice): dense element i, at coordinates (c_0, ..., c_{r-1}) of
// `size` in row-major order, corresponds to strided element
// base + sum_d c_d * stride[d] (strides may be negative or zero).
// Elements of any storage type move as they are stored (16-bit ones as
// their bits).
//
// One work-item per dense element, or per vector of up to 16 bytes where the
// view's last axis is contiguous in whole, aligned vectors. Axes of size 1
// are dropped and axes that stay contiguous in the view are merged before
// the launch, so the kernel (src/cl/strided_copy.cl, built per merged rank)
// sees few axes; at most kMaxStridedAxes may remain.
#pragma once
#include <CL/cl.h>

#include <string>
#include <vector>

#include "dlcaffe/context.hpp"
#include "dlcaffe/storage_type.hpp"

namespace dlcaffe {

constexpr int kMaxStridedAxes = 8;

struct StridedView {
  std::vector<int> size;    // the dense blob's shape
  std::vector<int> stride;  // per axis, in floats of the strided buffer
  int base = 0;             // the strided buffer's element at coordinates 0
};

// The view with size-1 axes dropped and mergeable neighbours merged; a view
// of no axes becomes one axis of size 1.
StridedView SimplifyStridedView(const StridedView& view);

// Throws an Error prefixed by `where` if the simplified view has more than
// kMaxStridedAxes axes.
void CheckStridedView(const StridedView& view, const std::string& where);

// dense[i] = strided[place(i)] for every dense element (gather). Both
// buffers hold elements of `type` (moved as they are stored).
void StridedGather(Context& ctx, const StridedView& view, cl_mem strided, cl_mem dense,
                   StorageType type = StorageType::kFloat32);
// strided[place(i)] = dense[i] (scatter; places must be distinct, elements
// of `strided` outside the view are left as they are).
void StridedScatter(Context& ctx, const StridedView& view, cl_mem dense, cl_mem strided,
                    StorageType type = StorageType::kFloat32);

}  // namespace dlcaffe
