// tools/mma_probe.cpp --local_limit: how much __local memory a kernel may
// take as a dynamic argument. Every work-item writes its share of `n` floats
// of `buf`, then sums the group's values in reverse order, so that a launch
// that ran with less memory than it was given shows as a wrong sum.
__kernel void local_memory_probe(__local float* buf, const int n, __global float* out) {
  const int lid = get_local_id(0), size = get_local_size(0);
  for (int i = lid; i < n; i += size) buf[i] = (float)(i % 1024);
  barrier(CLK_LOCAL_MEM_FENCE);
  float sum = 0.f;
  for (int i = lid; i < n; i += size) sum += buf[n - 1 - i];
  out[get_global_id(0)] = sum;
}
