// Filter: the top keeps the bottom rows whose selector is nonzero, in order.
// Rows are `inner` floats long.

// y[r] = x[rows[r]]: rows lists the selected bottom rows, one per top row.
__kernel void filter_forward(const int n, const int inner, __global const int* rows,
                             __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int r = i / inner;
  y[i] = x[rows[r] * inner + (i - r * inner)];
}

// dx[row] = dy[top_row[row]] for a selected row, 0 for the others; top_row
// maps each bottom row to its top row or -1 (a gather: no atomics).
__kernel void filter_backward(const int n, const int inner, __global const int* top_row,
                              __global const float* dy, __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int row = i / inner;
  const int t = top_row[row];
  dx[i] = t >= 0 ? dy[t * inner + (i - row * inner)] : 0.f;
}
