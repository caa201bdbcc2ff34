// Learned absolute positions (src/layers/position_embedding.cpp): y = x +
// table[position + t] for the row at t of a B x T x D blob.

__kernel void position_embedding_forward(int count, int T, int D, int position,
                                         __global const DATA_ELEM* x, __global const float* table,
                                         __global DATA_ELEM* y) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int d = i % D;
  const int t = (i / D) % T;
  DATA_STORE(y, i, DATA_LOAD(x, i) + table[(position + t) * D + d]);
}

// The table's gradient: row t gathers the top diff of position t over the
// batch (a work-item per table entry of the first T rows; no atomics).
__kernel void position_embedding_table_backward(int count, int B, int T, int D,
                                                __global const DATA_ELEM* dy,
                                                __global float* dtable) {
  const int i = get_global_id(0);
  if (i >= count) return;
  float sum = 0.f;
  for (int b = 0; b < B; ++b) sum += DATA_LOAD(dy, (size_t)b * T * D + i);
  dtable[i] += sum;
}
