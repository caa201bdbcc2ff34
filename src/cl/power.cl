// Power: y = (shift + scale * x)^power. The layer handles power 0 and scale 0
// (a constant output, zero gradient) without these kernels.

__kernel void power_forward(const int n, const float power, const float scale,
                            const float shift, __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float t = shift + scale * x[i];
  // Exact squares and identities; pow() is only accurate to a few ulp.
  y[i] = power == 1.f ? t : (power == 2.f ? t * t : pow(t, power));
}

// dy/dx = power * scale * (shift + scale * x)^(power - 1). Caffe writes the
// general case as power * scale * y / (shift + scale * x), which is NaN where
// shift + scale * x = 0; the direct form gives the true limit there.
__kernel void power_backward(const int n, const float power, const float scale,
                             const float shift, __global const float* x,
                             __global const float* dy, __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float diff_scale = power * scale;
  float slope;
  if (power == 1.f) {
    slope = diff_scale;
  } else {
    const float t = shift + scale * x[i];
    slope = diff_scale * (power == 2.f ? t : pow(t, power - 1.f));
  }
  dx[i] = dy[i] * slope;
}
