// Top-k accuracy (Caffe's AccuracyLayer). Scores are outer x classes x inner,
// labels outer x inner.

#define ACCURACY_GROUP 128

// One work-group scores every position and writes the accuracy, a 0-d top.
// A label is among the top k when fewer than k other classes rank above it;
// equal scores rank the higher class index first, as Caffe's partial_sort of
// (score, class) pairs does. outcome[i] is 1 (hit), 0 (miss) or -1 (ignored),
// for the per-class kernel. A label outside [0, classes) counts as a miss.
__kernel __attribute__((reqd_work_group_size(ACCURACY_GROUP, 1, 1)))
void accuracy_forward(const int outer, const int classes, const int inner,
                      __global const DATA_ELEM* scores, __global const float* label,
                      const int has_ignore_label, const int ignore_label, const int top_k,
                      __global float* accuracy, __global int* outcome) {
  __local int hit_part[ACCURACY_GROUP];
  __local int count_part[ACCURACY_GROUP];
  const int lid = get_local_id(0);
  const int positions = outer * inner;
  int hits = 0, count = 0;
  for (int i = lid; i < positions; i += ACCURACY_GROUP) {
    const int l = (int)label[i];
    if (has_ignore_label && l == ignore_label) {
      outcome[i] = -1;
      continue;
    }
    ++count;
    int hit = 0;
    if (l >= 0 && l < classes) {
      const int o = i / inner, s = i - o * inner;
      __global const DATA_ELEM* column = scores + o * classes * inner + s;
      const float truth = DATA_LOAD(column, l * inner);
      int above = 0;
      for (int k = 0; k < classes && above < top_k; ++k) {
        const float v = DATA_LOAD(column, k * inner);
        above += (v > truth || (v == truth && k > l)) ? 1 : 0;
      }
      hit = above < top_k;
    }
    outcome[i] = hit;
    hits += hit;
  }
  hit_part[lid] = hits;
  count_part[lid] = count;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = ACCURACY_GROUP / 2; span > 0; span >>= 1) {
    if (lid < span) {
      hit_part[lid] += hit_part[lid + span];
      count_part[lid] += count_part[lid + span];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    accuracy[0] = count_part[0] > 0 ? (float)hit_part[0] / (float)count_part[0] : 0.f;
}

// Accuracy of each class over the positions labelled with it (0 for a class
// with none): one work-item per class, so no atomics.
__kernel void accuracy_per_class(const int positions, const int classes,
                                 __global const float* label,
                                 __global const int* outcome,
                                 __global float* per_class) {
  const int c = GLOBAL_INDEX;
  if (c >= classes) return;
  int hits = 0, count = 0;
  for (int i = 0; i < positions; ++i) {
    if (outcome[i] >= 0 && (int)label[i] == c) {
      ++count;
      hits += outcome[i];
    }
  }
  per_class[c] = count > 0 ? (float)hits / (float)count : 0.f;
}
