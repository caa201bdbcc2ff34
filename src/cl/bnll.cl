// BNLL (binomial normal log likelihood): y = log(1 + exp(x)), written so that
// exp never overflows: x + log(1 + exp(-x)) for x > 0.

__kernel void bnll_forward(const int n, __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float v = x[i];
  y[i] = v > 0.f ? v + log1p(exp(-v)) : log1p(exp(v));
}

// dy/dx = exp(x) / (1 + exp(x)), with x capped at 50 as in Caffe (the ratio is
// 1 in float well before that).
__kernel void bnll_backward(const int n, __global const float* x, __global const float* dy,
                            __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float e = exp(fmin(x[i], 50.f));
  dx[i] = dy[i] * e / (e + 1.f);
}
