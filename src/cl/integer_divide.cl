// IntegerDivide (src/layers/integer_divide.cpp): whole numbers held as
// floats (exact below 2^24) divided in integer arithmetic, so that the
// quotient does not depend on the device's float division.
// OPERATION: 0 quotient toward zero, 1 remainder with the dividend's sign,
// 2 remainder with the divisor's sign.

__kernel void integer_divide(const int n, const int operation, const long divisor,
                             __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const long a = (long)x[i];
  long r = a % divisor;
  if (operation == 2 && r != 0 && ((r < 0) != (divisor < 0))) r += divisor;
  y[i] = operation == 0 ? (float)(a / divisor) : (float)r;
}
