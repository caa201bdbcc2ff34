#include "layers/channel_sums.hpp"

#include <algorithm>

#include "dlcaffe/context.hpp"

namespace dlcaffe {

namespace {

// channel_finish_sums' view of a target: a buffer (any, when skipped) and
// 1 accumulate, 0 write, -1 skip.
cl_mem Out(const ChannelSumTarget& t, cl_mem any) { return t.out ? t.out : any; }
int Mode(const ChannelSumTarget& t) { return t.out ? (t.accumulate ? 1 : 0) : -1; }

}  // namespace

void ChannelSums(Context& ctx, ChannelSumKind kind, int outer, int channels, int inner,
                 cl_mem a, cl_mem b, const ChannelSumTarget& first,
                 const ChannelSumTarget& second) {
  if (channels == 0) return;
  const size_t kGroup = 64;  // CS_GROUP in channel_sums.cl
  // Segments of about 8 values per work-item.
  const int segments = std::max(1, (inner + 511) / 512);
  const int segment_length = inner > 0 ? (inner + segments - 1) / segments : 0;
  const int parts = inner > 0 ? outer * segments : 0;
  const char* options = kind == ChannelSumKind::kMoments ? "-DSUM_KIND=0" : "-DSUM_KIND=1";
  BufferPtr partial = ctx.Allocate(sizeof(float) * std::max<size_t>(1, size_t(2) * channels * parts));
  if (parts > 0)
    ctx.Launch(ctx.Kernel("channel_sums.cl", options, "channel_partial_sums"),
               NDRange(size_t(parts) * kGroup, channels), NDRange(kGroup, 1), channels, inner,
               segments, segment_length, parts, a, b ? b : a, partial->mem());
  ctx.Launch(ctx.Kernel("channel_sums.cl", options, "channel_finish_sums"),
             NDRange(size_t(channels) * kGroup), NDRange(kGroup), channels, parts,
             partial->mem(), Out(first, partial->mem()), first.offset, Mode(first),
             Out(second, partial->mem()), second.offset, Mode(second));
}

}  // namespace dlcaffe
