// Block copies between a "part" blob, viewed as [outer, part_axis, inner], and
// the range [offset, offset + part_axis) of one axis of a "whole" blob, viewed
// as [outer, whole_axis, inner]. Concat's forward and Slice's backward write
// parts into the whole; Concat's backward and Slice's forward read them out.
// One work-item per element of the part (n = outer * part_axis * inner).
// DATA_TYPE (common.cl's storage codes; float by default): the elements are
// moved as they are stored, 16-bit ones as their bits.

#if DATA_TYPE != 0
#define ELEM ushort
#else
#define ELEM float
#endif

__kernel void part_to_whole(const int n, const int part_axis, const int whole_axis,
                            const int offset, const int inner,
                            __global const ELEM* part, __global ELEM* whole) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int block = part_axis * inner;
  const int o = i / block;
  whole[(o * whole_axis + offset) * inner + (i - o * block)] = part[i];
}

__kernel void whole_to_part(const int n, const int part_axis, const int whole_axis,
                            const int offset, const int inner,
                            __global const ELEM* whole, __global ELEM* part) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int block = part_axis * inner;
  const int o = i / block;
  part[i] = whole[(o * whole_axis + offset) * inner + (i - o * block)];
}
