// Host evaluation of ops whose inputs are all known at import time: the
// shape arithmetic exporters write around static shapes (Shape -> Gather ->
// Concat -> Reshape, ...) and constant subexpressions. Values are doubles;
// integer tensors keep integer semantics (Div truncates).
#pragma once
#include <functional>

#include "import/onnx_graph.hpp"

namespace dlcaffe {
namespace onnx_import {

// Elementwise with numpy broadcasting.
HostTensor HostBinary(const NodeContext& ctx, const HostTensor& a, const HostTensor& b,
                      const std::function<double(double, double)>& f);
HostTensor HostUnary(const HostTensor& a, const std::function<double(double)>& f);
// Axis permutation (ONNX Transpose).
HostTensor HostTranspose(const HostTensor& a, const std::vector<int>& perm);
// Strided slice along each axis: starts/steps already clamped, `sizes` the
// result's extent per axis.
HostTensor HostSlice(const HostTensor& a, const std::vector<int64_t>& starts,
                     const std::vector<int64_t>& steps, const std::vector<int64_t>& sizes);
// Gather along `axis` (indices already made non-negative).
HostTensor HostGather(const HostTensor& a, const HostTensor& indices, int axis);
HostTensor HostConcat(const std::vector<const HostTensor*>& parts, int axis);
// GatherElements along `axis` (indices already made non-negative and in range;
// the result has their shape).
HostTensor HostGatherElements(const HostTensor& a, const HostTensor& indices, int axis);

}  // namespace onnx_import
}  // namespace dlcaffe
