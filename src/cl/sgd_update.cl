// Caffe's SGD step for one parameter blob, fused into one pass:
//   g = diff * grad_scale (clipping and iter_size normalisation)
//   g += decay * w (L2) or decay * sign(w) (L1)
//   h = rate * g + momentum * h;  diff = h;  w -= h
__kernel void sgd_update(const int n, __global float* w, __global float* diff,
                         __global float* h, const float grad_scale, const float decay,
                         const int l1, const float rate, const float momentum) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float wi = w[i];
  float g = diff[i] * grad_scale;
  g += l1 ? decay * sign(wi) : decay * wi;
  const float hi = rate * g + momentum * h[i];
  h[i] = hi;
  diff[i] = hi;
  w[i] = wi - hi;
}
