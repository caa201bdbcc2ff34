#include "layers/channel_sums.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/gemm_config.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {

// A kernel's view of a target: a buffer (any, when skipped) and
// 1 accumulate, 0 write, -1 skip.
cl_mem Out(const ChannelSumTarget& t, cl_mem any) { return t.out ? t.out : any; }
int Mode(const ChannelSumTarget& t) { return t.out ? (t.accumulate ? 1 : 0) : -1; }

std::string Options(ChannelSumKind kind, bool runs) {
  return std::string(kind == ChannelSumKind::kMoments ? "-DSUM_KIND=0 " : "-DSUM_KIND=1 ") +
         ChannelShapeOption(runs);
}

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// CPU shape: channels x parts work-items. A channel is split into parts only
// when there are too few channels to keep the cores busy, and never into
// runs shorter than kMinPartFloats (a part costs a partial sum and the
// finishing kernel).
void RunSums(Context& ctx, const std::string& options, int outer, int channels, int inner,
             cl_mem a, cl_mem b, const ChannelSumTarget& first,
             const ChannelSumTarget& second) {
  const int kTargetItems = 64;       // several per core: the parts are uneven
  const int kMinPartFloats = 16384;  // a part's run is long next to its overhead
  const long per_channel = long(outer) * inner;
  cl_kernel finish = ctx.Kernel("channel_sums.cl", options, "channel_finish_runs");
  if (per_channel == 0) {  // empty sums: the finishing kernel over no parts writes zeros
    ctx.Launch1D(finish, channels, channels, 0, a, Out(first, a), first.offset, Mode(first),
                 Out(second, a), second.offset, Mode(second));
    return;
  }
  int parts = 1;
  if (channels < kTargetItems && per_channel >= 2L * kMinPartFloats)
    parts = int(std::min<long>(CeilDiv(kTargetItems, channels), per_channel / kMinPartFloats));
  // Whole rows per part where the rows suffice, else segments of each row
  // (segment starts at multiples of 16 floats keep the vector loads in step).
  int rows_per_part = CeilDiv(outer, std::min(parts, outer));
  int segments = 1, segment_length = inner;
  if (parts > outer) {
    rows_per_part = 1;
    segment_length = CeilDiv(CeilDiv(inner, CeilDiv(parts, outer)), 16) * 16;
    segments = CeilDiv(inner, segment_length);
  }
  parts = CeilDiv(outer, rows_per_part) * segments;

  const size_t kGroup = 8;  // small work-groups: one item's loop is the work
  const size_t items = size_t(channels) * parts;
  const size_t global = (items + kGroup - 1) / kGroup * kGroup;
  cl_kernel sums = ctx.Kernel("channel_sums.cl", options, "channel_run_sums");
  if (parts == 1) {  // each item's sums are its channel's: straight to the targets
    ctx.Launch(sums, NDRange(global), NDRange(kGroup), outer, channels, inner, parts, segments,
               rows_per_part, segment_length, a, b, Out(first, a), first.offset, Mode(first),
               Out(second, a), second.offset, Mode(second));
    return;
  }
  BufferPtr partial = ctx.Allocate(sizeof(float) * 2 * items);
  ctx.Launch(sums, NDRange(global), NDRange(kGroup), outer, channels, inner, parts, segments,
             rows_per_part, segment_length, a, b, partial->mem(), 0, 0, partial->mem(),
             int(items), 0);
  ctx.Launch1D(finish, channels, channels, parts, partial->mem(), Out(first, a), first.offset,
               Mode(first), Out(second, a), second.offset, Mode(second));
}

// GPU shape: work-groups of 64 over segments of about 512 values, then a
// work-group per channel adds the partials.
void GroupSums(Context& ctx, const std::string& options, int outer, int channels, int inner,
               cl_mem a, cl_mem b, const ChannelSumTarget& first,
               const ChannelSumTarget& second) {
  const size_t kGroup = 64;  // CS_GROUP in channel_sums.cl
  // Segments of about 8 values per work-item.
  const int segments = std::max(1, (inner + 511) / 512);
  const int segment_length = inner > 0 ? (inner + segments - 1) / segments : 0;
  const int parts = inner > 0 ? outer * segments : 0;
  BufferPtr partial =
      ctx.Allocate(sizeof(float) * std::max<size_t>(1, size_t(2) * channels * parts));
  if (parts > 0)
    ctx.Launch(ctx.Kernel("channel_sums.cl", options, "channel_partial_sums"),
               NDRange(size_t(parts) * kGroup, channels), NDRange(kGroup, 1), channels, inner,
               segments, segment_length, parts, a, b, partial->mem());
  ctx.Launch(ctx.Kernel("channel_sums.cl", options, "channel_finish_sums"),
             NDRange(size_t(channels) * kGroup), NDRange(kGroup), channels, parts,
             partial->mem(), Out(first, partial->mem()), first.offset, Mode(first),
             Out(second, partial->mem()), second.offset, Mode(second));
}

}  // namespace

bool UseChannelRuns(Context& ctx) {
  if (const char* forced = std::getenv("DLCAFFE_CHANNEL_KERNELS")) {
    const std::string value = forced;
    DLC_REQUIRE(value == "runs" || value == "groups",
                "DLCAFFE_CHANNEL_KERNELS must be 'runs' or 'groups', not '" << value << "'");
    return value == "runs";
  }
  return PrefersCpuShapedKernels(ctx.info());
}

const char* ChannelShapeOption(bool runs) { return runs ? "-DCPU_SHAPE=1" : "-DCPU_SHAPE=0"; }

int ElementwiseChunk(int count) {
  const int kTargetItems = 64;      // several per core: the rows make items uneven
  const int kMinChunkFloats = 4096;  // long next to a work-item's overhead
  const int chunk = std::max(kMinChunkFloats, CeilDiv(count, kTargetItems));
  return CeilDiv(chunk, 16) * 16;
}

void ChannelSums(Context& ctx, ChannelSumKind kind, int outer, int channels, int inner,
                 cl_mem a, cl_mem b, const ChannelSumTarget& first,
                 const ChannelSumTarget& second) {
  if (channels == 0) return;
  const bool runs = UseChannelRuns(ctx);
  const std::string options = Options(kind, runs);
  if (runs) {
    RunSums(ctx, options, outer, channels, inner, a, b ? b : a, first, second);
  } else {
    GroupSums(ctx, options, outer, channels, inner, a, b ? b : a, first, second);
  }
}

}  // namespace dlcaffe
