// The end of a label loss that one work-group of LOSS_GROUP work-items
// computes (softmax_loss.cl, infogain_loss.cl): each work-item's loss sum,
// count of valid positions and first bad position, summed (the first taken)
// over the group in a fixed order; then work-item 0 writes the normalized
// loss, the normalizer for backward, and a bad label's record
// (write_label_loss: that pass's loss is NaN).

#define LOSS_GROUP 128

void finish_label_loss(const float sum, const int valid, const int bad,
                       __local float* loss_part, __local int* valid_part,
                       __local int* bad_part, const int normalization, const int positions,
                       const int outer, __global const float* label, __global float* loss,
                       __global float* normalizer, __global int* label_error) {
  const int lid = get_local_id(0);
  loss_part[lid] = sum;
  valid_part[lid] = valid;
  bad_part[lid] = bad;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = LOSS_GROUP / 2; span > 0; span >>= 1) {
    if (lid < span) {
      loss_part[lid] += loss_part[lid + span];
      valid_part[lid] += valid_part[lid + span];
      bad_part[lid] = min(bad_part[lid], bad_part[lid + span]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid != 0) return;
  const float norm = loss_normalizer(normalization, positions, valid_part[0], outer);
  normalizer[0] = norm;
  write_label_loss(bad_part[0], loss_part[0] / norm, label, loss, label_error);
}
