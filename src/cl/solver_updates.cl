// The solvers' parameter updates, one kernel per solver, each a single pass
// over one parameter blob that also applies the gradient scale (clipping,
// iter_size) and the weight decay.

// The gradient after scaling and weight decay (L1: decay * sign(w)).
inline float regularized_gradient(const float diff, const float w, const float grad_scale,
                                  const float decay, const int l1) {
  return diff * grad_scale + (l1 ? decay * sign(w) : decay * w);
}

// Caffe's SGD step:
//   g = diff * grad_scale (clipping and iter_size normalisation)
//   g += decay * w (L2) or decay * sign(w) (L1)
//   h = rate * g + momentum * h;  diff = h;  w -= h
__kernel void sgd_update(const int n, __global float* w, __global float* diff,
                         __global float* h, const float grad_scale, const float decay,
                         const int l1, const float rate, const float momentum) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float wi = w[i];
  const float g = regularized_gradient(diff[i], wi, grad_scale, decay, l1);
  const float hi = rate * g + momentum * h[i];
  h[i] = hi;
  diff[i] = hi;
  w[i] = wi - hi;
}
