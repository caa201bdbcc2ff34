// Reduce (src/layers/reduce.cpp) over axes that the generated per-channel
// reductions cannot take (kept axes on both sides of a reduced one, ...).
// The bottom's axes come merged into groups, each kept or reduced; KEPT and
// RED are the numbers of each (KEPT >= 1, RED >= 1, KEPT + RED <= 8).
// OP selects the operation (reduce.cpp's Op: 0 SUM, 1 MEAN, 2 MAX, 3 MIN,
// 4 SUM_SQUARE, 5 L1, 6 L2).

#ifndef KEPT
#define KEPT 1
#endif
#ifndef RED
#define RED 1
#endif
#ifndef OP
#define OP 0
#endif

typedef struct {
  int kept_size[8];      // kept groups: sizes and the bottom's strides
  int kept_stride[8];
  int red_size[8];       // reduced groups likewise
  int red_stride[8];
  int size[8];           // every group, in order: sizes and the top's strides
  int top_stride[8];     //   (0 for reduced groups)
} reduce_geometry;

// The bottom offset of top element o (coordinates over the kept groups).
inline int kept_base(int o, const reduce_geometry* g) {
  int base = 0;
#pragma unroll
  for (int d = KEPT - 1; d >= 0; --d) {
    base += (o % g->kept_size[d]) * g->kept_stride[d];
    o /= g->kept_size[d];
  }
  return base;
}

// Visits the bottom offsets of top element o's reduced elements: sets
// `offset` to each in turn and runs BODY.
#define FOR_EACH_REDUCED(g, base, offset, BODY)                 \
  {                                                             \
    int k_[RED];                                                \
    for (int d_ = 0; d_ < RED; ++d_) k_[d_] = 0;                \
    int offset = base;                                          \
    for (;;) {                                                  \
      BODY;                                                     \
      int d_ = RED - 1;                                         \
      for (; d_ >= 0; --d_) {                                   \
        offset += (g)->red_stride[d_];                          \
        if (++k_[d_] < (g)->red_size[d_]) break;                \
        offset -= k_[d_] * (g)->red_stride[d_];                 \
        k_[d_] = 0;                                             \
      }                                                         \
      if (d_ < 0) break;                                        \
    }                                                           \
  }

// The accumulator's start and step (MIN is the maximum of -x, negated).
#if OP == 2 || OP == 3
#define INITIAL (-INFINITY)
#else
#define INITIAL 0.f
#endif
#if OP == 2
#define ACCUMULATE(acc, v) acc = fmax(acc, v)
#elif OP == 3
#define ACCUMULATE(acc, v) acc = fmax(acc, -(v))
#elif OP == 4 || OP == 6
#define ACCUMULATE(acc, v) acc += (v) * (v)
#elif OP == 5
#define ACCUMULATE(acc, v) acc += fabs(v)
#else
#define ACCUMULATE(acc, v) acc += (v)
#endif

// x, y and their gradients are stored as DATA_TYPE (common.cl); sums and
// ties are float. One work-item per top element.
__kernel void reduce_forward(const int n, const reduce_geometry g, const float count,
                             __global const DATA_ELEM* x, __global DATA_ELEM* y) {
  const int o = GLOBAL_INDEX;
  if (o >= n) return;
  const int base = kept_base(o, &g);
  float acc = INITIAL;
  FOR_EACH_REDUCED(&g, base, at, ACCUMULATE(acc, DATA_LOAD(x, at)))
#if OP == 1
  DATA_STORE(y, o, acc / count);
#elif OP == 3
  DATA_STORE(y, o, -acc);
#elif OP == 6
  DATA_STORE(y, o, sqrt(acc));
#else
  DATA_STORE(y, o, acc);
#endif
}

// MAX/MIN: how many reduced elements equal top element o (they share its
// gradient).
__kernel void reduce_count_ties(const int n, const reduce_geometry g,
                                __global const DATA_ELEM* x, __global const DATA_ELEM* y,
                                __global float* ties) {
  const int o = GLOBAL_INDEX;
  if (o >= n) return;
  const int base = kept_base(o, &g);
  const float extremum = DATA_LOAD(y, o);
  float equal = 0.f;
  FOR_EACH_REDUCED(&g, base, at, equal += DATA_LOAD(x, at) == extremum ? 1.f : 0.f)
  ties[o] = equal;
}

// One work-item per bottom element i, whose top element is o.
__kernel void reduce_backward(const int n, const reduce_geometry g, const float count,
                              __global const DATA_ELEM* x, __global const DATA_ELEM* y,
                              __global const DATA_ELEM* dy, __global const float* ties,
                              __global DATA_ELEM* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  int rest = i, o = 0;
#pragma unroll
  for (int d = KEPT + RED - 1; d >= 0; --d) {
    o += (rest % g.size[d]) * g.top_stride[d];
    rest /= g.size[d];
  }
  const float v = DATA_LOAD(x, i), t = DATA_LOAD(y, o), dt = DATA_LOAD(dy, o);
#if OP == 0
  const float grad = dt;
#elif OP == 1
  const float grad = dt / count;
#elif OP == 2 || OP == 3
  const float grad = v == t ? dt / ties[o] : 0.f;
#elif OP == 4
  const float grad = 2.f * v * dt;
#elif OP == 5
  const float grad = sign(v) * dt;
#else
  const float grad = t > 0.f ? v / t * dt : 0.f;
#endif
  DATA_STORE(dx, i, grad);
}
