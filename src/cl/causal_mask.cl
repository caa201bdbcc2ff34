// The "CausalMask" layer on rows of tk keys, tq rows per (batch, head):
// element (q, k) is kept where k <= q + (tk - tq) (the last query sees every
// key), else set to `fill`: -INFINITY forward (a following softmax gives it
// 0), 0 backward. The condition comes from the index: no mask buffer. y may
// alias x.
__kernel void causal_mask(const int n, const int tq, const int tk, const float fill,
                          __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int k = i % tk;
  const int q = (i / tk) % tq;
  y[i] = k <= q + (tk - tq) ? x[i] : fill;
}
