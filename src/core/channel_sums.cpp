#include "core/channel_sums.hpp"

#include <cstdlib>
#include <string>

#include "core/gemm_config.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// Each target is written (mode 0), added to (1) or skipped (-1; its buffer
// may be null).
const char kStoreSums[] =
    "if (first_mode >= 0) first = first_mode ? first + s1 : s1;\n"
    "if (second_mode >= 0) second = second_mode ? second + s2 : s2;";

const ChannelReduceKernel kMomentSums("channel_moment_sums",
                                      {In("a"), Channel("shift"), ChannelOut("first"),
                                       ChannelOut("second"), IntScalar("first_mode"),
                                       IntScalar("second_mode")},
                                      {Sum("s1", "a - shift"),
                                       Sum("s2", "(a - shift) * (a - shift)")},
                                      kStoreSums);
const ChannelReduceKernel kProductSums("channel_product_sums",
                                       {In("a"), In("b"), ChannelOut("first"),
                                        ChannelOut("second"), IntScalar("first_mode"),
                                        IntScalar("second_mode")},
                                       {Sum("s1", "a"), Sum("s2", "a * b")}, kStoreSums);

BufferArg Target(const ChannelSumTarget& t) { return {t.out, t.offset}; }
// The moments' shift per channel: a[c * inner], a per-channel argument of
// a's storage type.
BufferArg Shifts(const BufferArg& a, int inner) {
  BufferArg shifts(a.mem, a.offset, inner);
  shifts.type = a.type;
  return shifts;
}
int Mode(const ChannelSumTarget& t) { return t.out ? (t.accumulate ? 1 : 0) : -1; }

}  // namespace

void ChannelSums(Context& ctx, KernelShape shape, ChannelSumKind kind, int outer, int channels,
                 int inner, const BufferArg& a, const BufferArg& b, const ChannelSumTarget& first,
                 const ChannelSumTarget& second, ReduceWorkspace* workspace) {
  if (channels == 0) return;
  ReduceWorkspace scratch;  // when the caller keeps none
  ReduceWorkspace& space = workspace ? *workspace : scratch;
  const std::vector<ScalarArg> modes = {Mode(first), Mode(second)};
  if (kind == ChannelSumKind::kMoments) {
    // The shift is the channel's first value, a[c * inner].
    kMomentSums.Launch(ctx, space, outer, channels, inner,
                       {a, Shifts(a, inner), Target(first), Target(second)}, modes, shape);
  } else {
    kProductSums.Launch(ctx, space, outer, channels, inner,
                        {a, b.mem ? b : a, Target(first), Target(second)}, modes, shape);
  }
}

}  // namespace dlcaffe
