// Eltwise: element-wise PROD, SUM (with coefficients) and MAX over the
// bottoms, combined two at a time by the layer.

// out = a * b (out may alias a or b)
__kernel void eltwise_mul(const int n, __global const float* a, __global const float* b,
                          __global float* out) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  out[i] = a[i] * b[i];
}

// out = ca * a + cb * b
__kernel void eltwise_sum2(const int n, const float ca, __global const float* a,
                           const float cb, __global const float* b, __global float* out) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  out[i] = ca * a[i] + cb * b[i];
}

// out = c * a, a scaled copy (an axpby with b = 0 would turn a NaN in out
// into NaN in the result).
__kernel void eltwise_scale_copy(const int n, const float c, __global const float* a,
                                 __global float* out) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  out[i] = c * a[i];
}

// MAX of bottoms 0 and 1, as Caffe: bottom 0 wins only when strictly greater,
// so a tie goes to bottom 1. mask records the winning bottom.
__kernel void eltwise_max_first2(const int n, __global const float* a,
                                 __global const float* b, __global float* out,
                                 __global int* mask) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float va = a[i], vb = b[i];
  const bool first = va > vb;
  out[i] = first ? va : vb;
  mask[i] = first ? 0 : 1;
}

// MAX with a further bottom (index `which`, 2 and up): it wins only when
// strictly greater than the running maximum, so a tie keeps the earlier one.
__kernel void eltwise_max_next(const int n, __global const float* b, const int which,
                               __global float* out, __global int* mask) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float v = b[i];
  if (v > out[i]) {
    out[i] = v;
    mask[i] = which;
  }
}

// dx = dy where bottom `which` gave the maximum, else 0.
__kernel void eltwise_max_backward(const int n, __global const float* dy,
                                   __global const int* mask, const int which,
                                   __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  dx[i] = mask[i] == which ? dy[i] : 0.f;
}

// PROD gradient without stable_prod_grad: dx = y / x * dy (NaN or inf where
// x is 0, as in Caffe).
__kernel void eltwise_prod_backward_quotient(const int n, __global const float* y,
                                             __global const float* x,
                                             __global const float* dy, __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  dx[i] = y[i] / x[i] * dy[i];
}
