// BinaryOp (src/layers/binary_op.cpp) where neither operand is a plain
// per-channel broadcast of the other: any numpy broadcast. The top's axes
// come merged into groups (axes of size 1 dropped, neighbours that
// broadcast alike merged); each operand has a stride per group, 0 where it
// is broadcast.
//
// OP: binary_op.cpp's operation (0 ADD, 1 SUB, 2 MUL, 3 DIV, 4 POW, 5 MAX,
// 6 MIN, 7..11 the comparisons); the formulas match the generated kernels' there.

#ifndef OP
#define OP 0
#endif
#ifndef RANK
#define RANK 1
#endif
#ifndef KEPT
#define KEPT 0
#endif
#ifndef RED
#define RED 0
#endif
#ifndef WRT
#define WRT 0
#endif

#if OP == 0
#define FORWARD(a, b) ((a) + (b))
#define GRAD_A(a, b, dy) (dy)
#define GRAD_B(a, b, dy) (dy)
#elif OP == 1
#define FORWARD(a, b) ((a) - (b))
#define GRAD_A(a, b, dy) (dy)
#define GRAD_B(a, b, dy) (-(dy))
#elif OP == 2
#define FORWARD(a, b) ((a) * (b))
#define GRAD_A(a, b, dy) ((dy) * (b))
#define GRAD_B(a, b, dy) ((dy) * (a))
#elif OP == 3
#define FORWARD(a, b) ((a) / (b))
#define GRAD_A(a, b, dy) ((dy) / (b))
#define GRAD_B(a, b, dy) (-(dy) * ((a) / (b)) / (b))
#elif OP == 4
#define FORWARD(a, b) pow(a, b)
#define GRAD_A(a, b, dy) ((b) == 0.f ? 0.f : (dy) * (b) * pow(a, (b) - 1.f))
#define GRAD_B(a, b, dy) ((a) == 0.f && (b) >= 0.f ? 0.f : (dy) * pow(a, b) * log(a))
#elif OP == 5
#define FORWARD(a, b) fmax(a, b)
#define GRAD_A(a, b, dy) ((a) > (b) ? (dy) : (a) == (b) ? 0.5f * (dy) : 0.f)
#define GRAD_B(a, b, dy) ((b) > (a) ? (dy) : (a) == (b) ? 0.5f * (dy) : 0.f)
#elif OP == 6
#define FORWARD(a, b) fmin(a, b)
#define GRAD_A(a, b, dy) ((a) < (b) ? (dy) : (a) == (b) ? 0.5f * (dy) : 0.f)
#define GRAD_B(a, b, dy) ((b) < (a) ? (dy) : (a) == (b) ? 0.5f * (dy) : 0.f)
#else
// The comparisons (7 EQUAL ... 11 GREATER_EQUAL): 0/1, no gradient.
#if OP == 7
#define FORWARD(a, b) ((a) == (b) ? 1.f : 0.f)
#elif OP == 8
#define FORWARD(a, b) ((a) < (b) ? 1.f : 0.f)
#elif OP == 9
#define FORWARD(a, b) ((a) <= (b) ? 1.f : 0.f)
#elif OP == 10
#define FORWARD(a, b) ((a) > (b) ? 1.f : 0.f)
#else
#define FORWARD(a, b) ((a) >= (b) ? 1.f : 0.f)
#endif
#define GRAD_A(a, b, dy) 0.f
#define GRAD_B(a, b, dy) 0.f
#endif

// Groups of axes: sizes and, per tensor, strides.
typedef struct {
  int size[8];
  int a[8];
  int b[8];
  int y[8];
} binary_axes;

// Moves the offsets by coordinate-decoded `index` over `count` groups.
#define DECODE(axes, count, index, oa, ob, oy)                      \
  {                                                                 \
    int rest_ = index;                                              \
    for (int d_ = (count) - 1; d_ >= 0; --d_) {                     \
      const int c_ = rest_ % (axes).size[d_];                       \
      rest_ /= (axes).size[d_];                                     \
      oa += c_ * (axes).a[d_];                                      \
      ob += c_ * (axes).b[d_];                                      \
      oy += c_ * (axes).y[d_];                                      \
    }                                                               \
  }

// One work-item per top element.
__kernel void binary_forward(const int n, const binary_axes g, __global const float* a,
                             __global const float* b, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  int oa = 0, ob = 0, oy = 0;
  DECODE(g, RANK, i, oa, ob, oy)
  y[i] = FORWARD(a[oa], b[ob]);
}

// The gradient of operand WRT (0: a, 1: b), one work-item per element of it:
// its kept groups (where it is not broadcast) locate the element, and the
// gradient sums over the reduced groups (where it is). accumulate: add to
// dx instead of writing it (a learned operand).
__kernel void binary_backward(const int n, const binary_axes kept, const binary_axes reduced,
                              const int accumulate, __global const float* a,
                              __global const float* b, __global const float* dy,
                              __global float* dx) {
  const int j = GLOBAL_INDEX;
  if (j >= n) return;
  int oa = 0, ob = 0, oy = 0;
#if KEPT > 0
  DECODE(kept, KEPT, j, oa, ob, oy)
#endif
  float sum = 0.f;
#if RED > 0
  int k[RED];
  for (int d = 0; d < RED; ++d) k[d] = 0;
  for (;;) {
#endif
#if WRT == 0
    sum += GRAD_A(a[oa], b[ob], dy[oy]);
#else
    sum += GRAD_B(a[oa], b[ob], dy[oy]);
#endif
#if RED > 0
    int d = RED - 1;
    for (; d >= 0; --d) {
      oa += reduced.a[d];
      ob += reduced.b[d];
      oy += reduced.y[d];
      if (++k[d] < reduced.size[d]) break;
      oa -= k[d] * reduced.a[d];
      ob -= k[d] * reduced.b[d];
      oy -= k[d] * reduced.y[d];
      k[d] = 0;
    }
    if (d < 0) break;
  }
#endif
  dx[j] = accumulate ? dx[j] + sum : sum;
}
