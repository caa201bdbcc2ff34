#include "import/onnx_host_ops.hpp"

#include <cmath>

namespace dlcaffe {
namespace onnx_import {

namespace {
std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}
}  // namespace

HostTensor HostBinary(const NodeContext& ctx, const HostTensor& a, const HostTensor& b,
                      const std::function<double(double, double)>& f) {
  HostTensor out;
  out.shape = BroadcastShapes(ctx, a.shape, b.shape);
  out.type = a.type;
  const int n = static_cast<int>(out.shape.size());
  const auto os = Strides(out.shape);
  auto strides_in = [&](const HostTensor& t) {
    std::vector<int64_t> s(n, 0);
    const auto ts = Strides(t.shape);
    const int off = n - static_cast<int>(t.shape.size());
    for (size_t i = 0; i < t.shape.size(); ++i) s[off + i] = t.shape[i] == 1 ? 0 : ts[i];
    return s;
  };
  const auto sa = strides_in(a), sb = strides_in(b);
  const int64_t count = HostValueCount(out.shape);
  out.values.resize(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t ia = 0, ib = 0, rest = i;
    for (int d = 0; d < n; ++d) {
      const int64_t c = rest / os[d];
      rest %= os[d];
      ia += c * sa[d];
      ib += c * sb[d];
    }
    double v = f(a.values[ia], b.values[ib]);
    if (out.is_integer()) v = std::trunc(v);
    out.values[i] = v;
  }
  return out;
}

HostTensor HostUnary(const HostTensor& a, const std::function<double(double)>& f) {
  HostTensor out = a;
  for (double& v : out.values) v = f(v);
  return out;
}

HostTensor HostTranspose(const HostTensor& a, const std::vector<int>& perm) {
  HostTensor out;
  out.type = a.type;
  const int n = static_cast<int>(perm.size());
  for (int p : perm) out.shape.push_back(a.shape[p]);
  const auto is = Strides(a.shape), os = Strides(out.shape);
  out.values.resize(a.values.size());
  for (int64_t i = 0; i < out.count(); ++i) {
    int64_t src = 0, rest = i;
    for (int d = 0; d < n; ++d) {
      src += (rest / os[d]) * is[perm[d]];
      rest %= os[d];
    }
    out.values[i] = a.values[src];
  }
  return out;
}

HostTensor HostSlice(const HostTensor& a, const std::vector<int64_t>& starts,
                     const std::vector<int64_t>& steps, const std::vector<int64_t>& sizes) {
  HostTensor out;
  out.type = a.type;
  out.shape = sizes;
  const int n = static_cast<int>(sizes.size());
  const auto is = Strides(a.shape), os = Strides(sizes);
  out.values.resize(out.count());
  for (int64_t i = 0; i < out.count(); ++i) {
    int64_t src = 0, rest = i;
    for (int d = 0; d < n; ++d) {
      src += (starts[d] + (rest / os[d]) * steps[d]) * is[d];
      rest %= os[d];
    }
    out.values[i] = a.values[src];
  }
  return out;
}

HostTensor HostGather(const HostTensor& a, const HostTensor& indices, int axis) {
  HostTensor out;
  out.type = a.type;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= a.shape[d];
  for (size_t d = axis + 1; d < a.shape.size(); ++d) inner *= a.shape[d];
  out.shape.assign(a.shape.begin(), a.shape.begin() + axis);
  out.shape.insert(out.shape.end(), indices.shape.begin(), indices.shape.end());
  out.shape.insert(out.shape.end(), a.shape.begin() + axis + 1, a.shape.end());
  const int64_t k = indices.count(), dim = a.shape[axis];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t idx = static_cast<int64_t>(indices.values[j]);
      for (int64_t i = 0; i < inner; ++i)
        out.values.push_back(a.values[(o * dim + idx) * inner + i]);
    }
  return out;
}

HostTensor HostGatherElements(const HostTensor& a, const HostTensor& indices, int axis) {
  HostTensor out;
  out.type = a.type;
  out.shape = indices.shape;
  const int rank = static_cast<int>(indices.shape.size());
  for (int64_t i = 0; i < indices.count(); ++i) {
    int64_t rest = i, offset = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t c = rest % indices.shape[d];
      rest /= indices.shape[d];
      offset += (d == axis ? static_cast<int64_t>(indices.values[i]) : c) * stride;
      stride *= a.shape[d];
    }
    out.values.push_back(a.values[offset]);
  }
  return out;
}

HostTensor HostConcat(const std::vector<const HostTensor*>& parts, int axis) {
  HostTensor out;
  out.type = parts[0]->type;
  out.shape = parts[0]->shape;
  out.shape[axis] = 0;
  for (const HostTensor* p : parts) out.shape[axis] += p->shape[axis];
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= out.shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (const HostTensor* p : parts) {
      const int64_t block = p->count() / std::max<int64_t>(outer, 1);
      for (int64_t i = 0; i < block; ++i) out.values.push_back(p->values[o * block + i]);
    }
  return out;
}

}  // namespace onnx_import
}  // namespace dlcaffe
