// The absolute positions of a blob's rows (src/layers/positions.cpp).

__kernel void positions_forward(int T, int position, __global float* y) {
  const int t = get_global_id(0);
  if (t < T) y[t] = (float)(position + t);
}
