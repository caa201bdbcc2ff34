// The bias of the InnerProduct layer; the products themselves go through
// Gemm(), its gradient through ChannelSums. The output is M x N row-major,
// the bias has N entries.

// top[m][n] += bias[n]
__kernel void add_bias(const int count, const int N, __global const float* bias,
                       __global float* top) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  top[i] += bias[i % N];
}
