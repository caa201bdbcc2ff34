// Whether a buffer holds Inf or NaN, without reading it to the host: every
// work-item sweeps a grid-strided run and raises the flag on the first
// non-finite value it meets (a benign race: every writer writes 1).
__kernel void flag_nonfinite(const int n, __global const float* x, const int x_off,
                             __global int* flag) {
  int found = 0;
  for (int i = get_global_id(0); i < n; i += get_global_size(0))
    found |= !isfinite(x[x_off + i]);
  if (found) flag[0] = 1;
}
