// BatchReindex: top row r = bottom row indices[r] (rows of `inner` floats).

// An index is valid when 0 <= index < rows; it is truncated to an int, as in
// Caffe. A top row with an invalid index is filled with NaN.
__kernel void batch_reindex_forward(const int n, const int inner, const int rows,
                                    __global const float* indices,
                                    __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int r = i / inner;
  const float index = indices[r];
  y[i] = (index >= 0.f && index < (float)rows) ? x[(int)index * inner + (i - r * inner)]
                                               : NAN;
}

// dx[row, c] = sum of dy[j, c] over the top rows j with indices[j] == row:
// one work-item per bottom element scans the index list (a gather, no atomics).
__kernel void batch_reindex_backward(const int n, const int inner, const int num_indices,
                                     __global const float* indices,
                                     __global const float* dy, __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int row = i / inner;
  const int c = i - row * inner;
  const float rows = (float)(n / inner);
  float sum = 0.f;
  for (int j = 0; j < num_indices; ++j) {
    const float index = indices[j];
    if (index >= 0.f && index < rows && (int)index == row) sum += dy[j * inner + c];
  }
  dx[i] = sum;
}
