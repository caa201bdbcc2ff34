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

// Caffe's Nesterov step (g as in sgd_update):
//   h_new = momentum * h + rate * g
//   update = (1 + momentum) * h_new - momentum * h_old;  diff = update;  w -= update
__kernel void nesterov_update(const int n, __global float* w, __global float* diff,
                              __global float* h, const float grad_scale, const float decay,
                              const int l1, const float rate, const float momentum) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float wi = w[i];
  const float g = regularized_gradient(diff[i], wi, grad_scale, decay, l1);
  const float h_old = h[i];
  const float h_new = momentum * h_old + rate * g;
  h[i] = h_new;
  const float update = (1.f + momentum) * h_new - momentum * h_old;
  diff[i] = update;
  w[i] = wi - update;
}

// Caffe's AdaGrad step: h += g^2;  update = rate * g / (sqrt(h) + delta).
__kernel void adagrad_update(const int n, __global float* w, __global float* diff,
                             __global float* h, const float grad_scale, const float decay,
                             const int l1, const float rate, const float delta) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float wi = w[i];
  const float g = regularized_gradient(diff[i], wi, grad_scale, decay, l1);
  const float hi = h[i] + g * g;
  h[i] = hi;
  const float update = rate * g / (sqrt(hi) + delta);
  diff[i] = update;
  w[i] = wi - update;
}

// Caffe's RMSProp step:
//   h = rms_decay * h + (1 - rms_decay) * g^2;  update = rate * g / (sqrt(h) + delta).
__kernel void rmsprop_update(const int n, __global float* w, __global float* diff,
                             __global float* h, const float grad_scale, const float decay,
                             const int l1, const float rate, const float rms_decay,
                             const float delta) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float wi = w[i];
  const float g = regularized_gradient(diff[i], wi, grad_scale, decay, l1);
  const float hi = rms_decay * h[i] + (1.f - rms_decay) * g * g;
  h[i] = hi;
  const float update = rate * g / (sqrt(hi) + delta);
  diff[i] = update;
  w[i] = wi - update;
}

// Caffe's AdaDelta step, with h the gradient history (first set) and h2 the
// update history (second set):
//   h = momentum * h + (1 - momentum) * g^2
//   u = g * sqrt((h2 + delta) / (h + delta))
//   h2 = momentum * h2 + (1 - momentum) * u^2
//   update = rate * u
__kernel void adadelta_update(const int n, __global float* w, __global float* diff,
                              __global float* h, __global float* h2, const float grad_scale,
                              const float decay, const int l1, const float rate,
                              const float momentum, const float delta) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float wi = w[i];
  const float g = regularized_gradient(diff[i], wi, grad_scale, decay, l1);
  const float hi = momentum * h[i] + (1.f - momentum) * g * g;
  h[i] = hi;
  const float u = g * sqrt((h2[i] + delta) / (hi + delta));
  h2[i] = momentum * h2[i] + (1.f - momentum) * u * u;
  const float update = rate * u;
  diff[i] = update;
  w[i] = wi - update;
}

// Caffe's Adam step, m and v the first and second history sets:
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   update = corrected_rate * m / (sqrt(v) + eps)
// with corrected_rate = rate * sqrt(1 - beta2^t) / (1 - beta1^t), t = iter + 1
// (eps is added to sqrt(v), not to the bias-corrected sqrt(v_hat), as Caffe does).
__kernel void adam_update(const int n, __global float* w, __global float* diff,
                          __global float* m, __global float* v, const float grad_scale,
                          const float decay, const int l1, const float corrected_rate,
                          const float beta1, const float beta2, const float eps) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float wi = w[i];
  const float g = regularized_gradient(diff[i], wi, grad_scale, decay, l1);
  const float mi = beta1 * m[i] + (1.f - beta1) * g;
  const float vi = beta2 * v[i] + (1.f - beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  const float update = corrected_rate * mi / (sqrt(vi) + eps);
  diff[i] = update;
  w[i] = wi - update;
}

// AdamW (decoupled weight decay, Loshchilov & Hutter), step for step as
// PyTorch's torch.optim.AdamW: the gradient carries no decay term; instead
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   update = rate * decay * w                                  (L2; L1: sign(w))
//          + (rate / bias1) * m / (sqrt(v) / sqrt_bias2 + eps)
// with bias1 = 1 - beta1^t, sqrt_bias2 = sqrt(1 - beta2^t), t = iter + 1; the
// decay uses w before the step, as PyTorch's param.mul_(1 - lr * wd) does.
__kernel void adamw_update(const int n, __global float* w, __global float* diff,
                           __global float* m, __global float* v, const float grad_scale,
                           const float decay, const int l1, const float rate,
                           const float step_size, const float sqrt_bias2,
                           const float beta1, const float beta2, const float eps) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float wi = w[i];
  const float g = diff[i] * grad_scale;
  const float mi = beta1 * m[i] + (1.f - beta1) * g;
  const float vi = beta2 * v[i] + (1.f - beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  const float update = rate * decay * (l1 ? sign(wi) : wi) +
                       step_size * mi / (sqrt(vi) / sqrt_bias2 + eps);
  diff[i] = update;
  w[i] = wi - update;
}
