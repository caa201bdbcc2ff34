#include "core/reduce_kernel.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

using pointwise::Arg;
using pointwise::BufferName;
using pointwise::ChannelValueName;
using pointwise::Reduction;
using pointwise::StrideName;

void ReduceWorkspace::Reserve(Context& ctx, size_t partial_floats) {
  if (partial_floats > partial_floats_) {
    partials_ = ctx.Allocate(partial_floats * sizeof(float));
    partial_floats_ = partial_floats;
  }
}

namespace {

const char* Initial(const Reduction& r) { return r.op == Reduction::kSum ? "0.f" : "-INFINITY"; }

// `acc` combined with `value` by the reduction's operation.
std::string Combine(const Reduction& r, const std::string& acc, const std::string& value) {
  return r.op == Reduction::kSum ? acc + " + " + value : "fmax(" + acc + ", " + value + ")";
}

// Loads of the In and Channel arguments at element pw_i (`width` 16: float16
// vectors; In buffers widened from their storage type), then each reduction's expression folded into its accumulator
// pw_a<k><suffix>.
std::string TermBlock(const std::vector<Arg>& args, const std::vector<Reduction>& reductions,
                      int width, const std::string& index, const std::string& suffix,
                      const std::string& indent) {
  const bool vector = width > 1;
  std::ostringstream s;
  s << indent << "{\n" << indent << "  typedef " << (vector ? "float16" : "float") << " real;\n";
  for (const Arg& a : args) {
    if (a.kind == Arg::kIn) {
      s << indent << "  const real " << a.name << " = "
        << (vector ? "PW_LOAD16__" : "PW_LOAD__") << a.name << "(" << index << ")"
        << ";\n";
    } else if (a.kind == Arg::kChannel) {
      s << indent << "  const real " << a.name << " = (real)" << ChannelValueName(a.name) << ";\n";
    }
  }
  for (size_t k = 0; k < reductions.size(); ++k) {
    const std::string acc = "pw_a" + std::to_string(k) + suffix;
    s << indent << "  " << acc << " = "
      << Combine(reductions[k], acc, "(" + reductions[k].expr + ")") << ";\n";
  }
  s << indent << "}\n";
  return s.str();
}

}  // namespace

ChannelReduceKernel::ChannelReduceKernel(const std::string& name, std::vector<Arg> args,
                                         std::vector<Reduction> reductions,
                                         const std::string& finish)
    : GeneratedKernel("channel reduce", name, std::move(args),
                      {Arg::kIn, Arg::kChannel, Arg::kChannelOut, Arg::kScalar,
                       Arg::kIntScalar},
                      {"pw_outer", "pw_channels", "pw_inner", "pw_parts", "pw_segments",
                       "pw_rows_per_part", "pw_segment_length"},
                      {"__global float* pw_partial"}),
      reductions_(std::move(reductions)),
      finish_(finish) {
  typed_kinds_ = {Arg::kIn, Arg::kChannel};
  DLC_REQUIRE(!reductions_.empty(), "channel reduce kernel " << name_ << " has no reductions");
  std::set<std::string> names;
  for (const Arg& a : args_) names.insert(a.name);
  std::ostringstream code;
  for (const Reduction& r : reductions_) {
    DLC_REQUIRE(!r.name.empty() && r.name.compare(0, 3, "pw_") != 0 && r.name != "channel" &&
                    names.insert(r.name).second,
                "channel reduce kernel " << name_ << ": reduction name '" << r.name
                                         << "' is empty, taken or reserved");
    code << (r.op == Reduction::kSum ? "Sum " : "Max ") << r.name << " = " << r.expr << "\n";
  }
  code << "finish: " << finish_;
  code_ = code.str();
  SetSource(Generate());
}

int ChannelReduceKernel::GroupSize(const DeviceInfo& device) {
  int group = 256;  // enough parallel loads per group to cover memory latency
  while (group > 1 && size_t(group) > device.max_work_group_size) group /= 2;
  return group;
}

ChannelReduceKernel::Split ChannelReduceKernel::ChooseSplit(const DeviceInfo& device,
                                                            bool cpu_shape, int outer,
                                                            int channels, int inner) {
  auto ceil_div = [](long a, long b) { return (a + b - 1) / b; };
  const long per_channel = long(outer) * inner;
  Split split;
  split.rows_per_part = std::max(outer, 1);
  split.segment_length = inner;
  if (per_channel == 0 || channels == 0) return split;
  if (!cpu_shape && inner == 1) {
    // Columns: enough work-items to fill the device (the target's groups of
    // 256), none summing fewer than 16 rows.
    const long column_blocks = ceil_div(channels, GroupSize(device));
    const long target_groups = 8L * std::max(device.compute_units, 1);
    const long by_device = ceil_div(target_groups, column_blocks);
    const long by_size = ceil_div(outer, 16L);
    const long parts = std::max(1L, std::min(by_device, by_size));
    split.columns = true;
    split.rows_per_part = int(ceil_div(outer, parts));
    split.parts = int(ceil_div(outer, split.rows_per_part));
    return split;
  }
  if (!cpu_shape) {
    // Enough work-groups to fill the device, none shorter than 16 values per
    // work-item (a part costs a partial result and an atomic).
    const long target_groups = 8L * std::max(device.compute_units, 1);
    const long by_device = ceil_div(target_groups, channels);
    const long by_size = ceil_div(per_channel, 16L * GroupSize(device));
    split.parts = int(std::max(1L, std::min(by_device, by_size)));
    return split;
  }
  // CPU shape: channels x parts work-items. A channel is split only when
  // there are too few channels to keep the cores busy, and never into runs
  // shorter than kMinPartFloats; whole rows per part where the rows suffice,
  // else segments of each row (starting at multiples of 16 floats, which
  // keeps the vector loads in step).
  const int kTargetItems = 64;       // several per core: the parts are uneven
  const long kMinPartFloats = 16384;  // a part's run is long next to its overhead
  int parts = 1;
  if (channels < kTargetItems && per_channel >= 2 * kMinPartFloats)
    parts = int(std::min<long>(ceil_div(kTargetItems, channels), per_channel / kMinPartFloats));
  split.rows_per_part = int(ceil_div(outer, std::min(parts, outer)));
  if (parts > outer) {
    split.rows_per_part = 1;
    split.segment_length = int(ceil_div(ceil_div(inner, ceil_div(parts, outer)), 16) * 16);
    split.segments = int(ceil_div(inner, split.segment_length));
  }
  split.parts = int(ceil_div(outer, split.rows_per_part)) * split.segments;
  return split;
}

// Where a channel has several parts, each part's results go to scratch for
// the combining launch, and the sweep ends there.
std::string ChannelReduceKernel::StorePartials() const {
  std::ostringstream s;
  s << "  if (pw_parts > 1) {  // the combining launch finishes\n"
    << "    const int pw_slot = channel * pw_parts + pw_part;\n";
  for (size_t k = 0; k < reductions_.size(); ++k)
    s << "    pw_partial[" << k << " * pw_channels * pw_parts + pw_slot] = pw_a" << k << ";\n";
  s << "    return;\n"
    << "  }\n";
  return s.str();
}

std::string ChannelReduceKernel::CpuSweep() const {
  const size_t n = reductions_.size();
  std::ostringstream s;
  s << "  const int pw_item = (int)get_global_id(0);\n"
    << "  if (pw_item >= pw_channels * pw_parts) return;\n"
    << "  channel = pw_item / pw_parts;\n"
    << "  const int pw_part = pw_item - channel * pw_parts;\n"
    << "  const int pw_rows = pw_part / pw_segments;\n"
    << "  const int pw_segment = pw_part - pw_rows * pw_segments;\n"
    << "  const int pw_row_end = min(pw_outer, (pw_rows + 1) * pw_rows_per_part);\n"
    << "  const int pw_begin = pw_segment * pw_segment_length;\n"
    << "  const int pw_end = min(pw_inner, pw_begin + pw_segment_length);\n"
    << LoadChannelValues("channel", "pw_outer > 0 && pw_inner > 0");
  // Two vector accumulators per reduction (independent chains), a scalar one
  // for the tails.
  for (size_t k = 0; k < n; ++k) {
    const std::string init = Initial(reductions_[k]);
    s << "  float16 pw_a" << k << "_0 = (float16)(" << init << "), pw_a" << k
      << "_1 = (float16)(" << init << ");\n"
      << "  pw_a" << k << " = " << init << ";\n";
  }
  s << "  for (int pw_o = pw_rows * pw_rows_per_part; pw_o < pw_row_end; ++pw_o) {\n"
    << "    const int pw_base = (pw_o * pw_channels + channel) * pw_inner;\n"
    << "    const int pw_stop = pw_base + pw_end;\n"
    << "    int pw_i = pw_base + pw_begin;\n"
    << "    for (; pw_i + 32 <= pw_stop; pw_i += 32) {\n"
    << TermBlock(args_, reductions_, 16, "pw_i", "_0", "      ")
    << TermBlock(args_, reductions_, 16, "pw_i + 16", "_1", "      ") << "    }\n"
    << "    if (pw_i + 16 <= pw_stop) {\n"
    << TermBlock(args_, reductions_, 16, "pw_i", "_0", "      ") << "      pw_i += 16;\n"
    << "    }\n"
    << "    for (; pw_i < pw_stop; ++pw_i)\n"
    << TermBlock(args_, reductions_, 1, "pw_i", "", "    ") << "  }\n";
  for (size_t k = 0; k < n; ++k) {
    const std::string a = "pw_a" + std::to_string(k);
    if (reductions_[k].op == Reduction::kSum) {
      s << "  " << a << " += pw_sum16(" << a << "_0 + " << a << "_1);\n";
    } else {
      s << "  " << a << " = fmax(" << a << ", pw_max16(fmax(" << a << "_0, " << a << "_1)));\n";
    }
  }
  s << StorePartials();
  return s.str();
}

std::string ChannelReduceKernel::GpuSweep() const {
  const size_t n = reductions_.size();
  std::ostringstream s;
  s << "  const int pw_group = (int)get_group_id(0);\n"
    << "  channel = pw_group / pw_parts;\n"
    << "  const int pw_part = pw_group - channel * pw_parts;\n"
    << LoadChannelValues("channel", "pw_outer > 0 && pw_inner > 0");
  for (size_t k = 0; k < n; ++k)
    s << "  pw_a" << k << " = " << Initial(reductions_[k]) << ";\n";
  // The channel's values j = o * inner + p, strided over its parts'
  // work-items: neighbouring work-items read neighbouring floats, and (o, p)
  // advance without a division per element. Four values per round, whose
  // loads the compiler can issue together (one load in flight per work-item
  // leaves a GPU's memory mostly idle), then one at a time.
  auto next_index = [](const std::string& i) {
    return "      const int " + i + " = (pw_o * pw_channels + channel) * pw_inner + pw_p;\n" +
           "      pw_o += pw_step_rows;\n"
           "      pw_p += pw_step_rest;\n"
           "      if (pw_p >= pw_inner) {\n"
           "        pw_p -= pw_inner;\n"
           "        ++pw_o;\n"
           "      }\n";
  };
  s << "  const int pw_total = pw_outer * pw_inner;\n"
    << "  int pw_j = pw_part * PW_GROUP + pw_lid;\n"
    << "  if (pw_j < pw_total) {\n"
    << "    const int pw_step = pw_parts * PW_GROUP;\n"
    << "    const int pw_step_rows = pw_step / pw_inner, pw_step_rest = pw_step % pw_inner;\n"
    << "    int pw_o = pw_j / pw_inner, pw_p = pw_j % pw_inner;\n"
    << "    for (; pw_j + 3 * pw_step < pw_total; pw_j += 4 * pw_step) {\n";
  for (int k = 0; k < 4; ++k) s << next_index("pw_i" + std::to_string(k));
  for (int k = 0; k < 4; ++k)
    s << TermBlock(args_, reductions_, 1, "pw_i" + std::to_string(k), "", "      ");
  s << "    }\n"
    << "    for (; pw_j < pw_total; pw_j += pw_step) {\n"
    << next_index("pw_i") << TermBlock(args_, reductions_, 1, "pw_i", "", "      ")
    << "    }\n"
    << "  }\n";
  s << GroupTree()
    << "  if (pw_parts > 1) {  // the combining launch finishes\n"
    << "    if (pw_lid == 0) {\n"
    << "      const int pw_slot = channel * pw_parts + pw_part;\n";
  for (size_t k = 0; k < n; ++k)
    s << "      pw_partial[" << k << " * pw_channels * pw_parts + pw_slot] = pw_a" << k << ";\n";
  s << "    }\n"
    << "    return;\n"
    << "  }\n"
    << "  if (pw_lid != 0) return;\n";
  return s.str();
}

// The GPU shape at inner = 1: work-item `channel` of a row slice's
// work-groups sums that column over the slice, four rows per round (loads
// the compiler can issue together). No barriers: a work-item past the last
// channel leaves at once.
std::string ChannelReduceKernel::ColumnSweep() const {
  const size_t n = reductions_.size();
  std::ostringstream s;
  s << "  const int pw_blocks = (pw_channels + PW_GROUP - 1) / PW_GROUP;\n"
    << "  const int pw_part = (int)get_group_id(0) / pw_blocks;\n"
    << "  channel = ((int)get_group_id(0) - pw_part * pw_blocks) * PW_GROUP + pw_lid;\n"
    << "  if (channel >= pw_channels) return;\n"
    << LoadChannelValues("channel", "pw_outer > 0");
  for (size_t k = 0; k < n; ++k)
    s << "  pw_a" << k << " = " << Initial(reductions_[k]) << ";\n";
  s << "  const int pw_row_end = min(pw_outer, (pw_part + 1) * pw_rows_per_part);\n"
    << "  int pw_o = pw_part * pw_rows_per_part;\n"
    << "  for (; pw_o + 3 < pw_row_end; pw_o += 4) {\n";
  for (int k = 0; k < 4; ++k)
    s << "    const int pw_i" << k << " = (pw_o + " << k << ") * pw_channels + channel;\n";
  for (int k = 0; k < 4; ++k)
    s << TermBlock(args_, reductions_, 1, "pw_i" + std::to_string(k), "", "    ");
  s << "  }\n"
    << "  for (; pw_o < pw_row_end; ++pw_o) {\n"
    << "    const int pw_i = pw_o * pw_channels + channel;\n"
    << TermBlock(args_, reductions_, 1, "pw_i", "", "    ") << "  }\n"
    << StorePartials();
  return s.str();
}

// Each work-item's accumulators combined across the work-group in __local
// memory; every work-item ends with the group's results.
std::string ChannelReduceKernel::GroupTree() const {
  const size_t n = reductions_.size();
  std::ostringstream tree;
  for (size_t k = 0; k < n; ++k)
    tree << "  pw_scratch[" << k << " * PW_GROUP + pw_lid] = pw_a" << k << ";\n";
  tree << "  barrier(CLK_LOCAL_MEM_FENCE);\n"
       << "  for (int pw_span = PW_GROUP / 2; pw_span > 0; pw_span >>= 1) {\n"
       << "    if (pw_lid < pw_span) {\n";
  for (size_t k = 0; k < n; ++k) {
    const std::string at = "pw_scratch[" + std::to_string(k) + " * PW_GROUP + pw_lid";
    tree << "      " << at << "] = " << Combine(reductions_[k], at + "]", at + " + pw_span]")
         << ";\n";
  }
  tree << "    }\n"
       << "    barrier(CLK_LOCAL_MEM_FENCE);\n"
       << "  }\n";
  for (size_t k = 0; k < n; ++k)
    tree << "  pw_a" << k << " = pw_scratch[" << k << " * PW_GROUP];\n";
  return tree.str();
}

// The combining launch (a channel's parts' results, written by the
// sweep's launch): in the GPU shape a work-group per channel, strided over
// the parts, then the group's tree; in the CPU shape a work-item per
// channel. The results are added in a fixed order: the same sums every run.
std::string ChannelReduceKernel::CombineParts(bool gpu) const {
  std::ostringstream s;
  if (gpu) {
    s << "  channel = (int)get_group_id(0);\n";
  } else {
    s << "  channel = (int)get_global_id(0);\n"
      << "  if (channel >= pw_channels) return;\n";
  }
  for (size_t k = 0; k < reductions_.size(); ++k)
    s << "  pw_a" << k << " = " << Initial(reductions_[k]) << ";\n";
  s << "  for (int pw_t = " << (gpu ? "pw_lid" : "0") << "; pw_t < pw_parts; pw_t += "
    << (gpu ? "PW_GROUP" : "1") << ") {\n";
  for (size_t k = 0; k < reductions_.size(); ++k) {
    const std::string a = "pw_a" + std::to_string(k);
    s << "    " << a << " = "
      << Combine(reductions_[k], a,
                 "pw_partial[(" + std::to_string(k) +
                     " * pw_channels + channel) * pw_parts + pw_t]")
      << ";\n";
  }
  s << "  }\n";
  if (gpu) s << GroupTree() << "  if (pw_lid != 0) return;\n";
  return s.str();
}

std::string ChannelReduceKernel::Finish() const {
  std::ostringstream s;
  s << "  {\n    typedef float real;\n";
  for (size_t k = 0; k < reductions_.size(); ++k)
    s << "    const float " << reductions_[k].name << " = pw_a" << k << ";\n";
  // Per-channel inputs read through their storage type; outputs (float)
  // are lvalues.
  for (const Arg& a : args_) {
    if (a.kind == Arg::kChannel)
      s << "#define " << a.name << " PW_LOAD__" << a.name << "(channel * " << StrideName(a.name)
        << ")\n";
    else if (a.per_channel())
      s << "#define " << a.name << " (" << BufferName(a.name) << "[channel * "
        << StrideName(a.name) << "])\n";
  }
  s << "    {\n" << finish_ << "\n    }\n";
  for (const Arg& a : args_)
    if (a.per_channel()) s << "#undef " << a.name << "\n";
  s << "  }\n";
  return s.str();
}

std::string ChannelReduceKernel::Generate() const {
  std::ostringstream s;
  s << "// Generated by src/core/reduce_kernel.cpp: channel reduce kernel " << name_ << ".\n"
    << "#ifndef PW_CPU_SHAPE\n#define PW_CPU_SHAPE 0\n#endif\n"
    << "#if PW_CPU_SHAPE\n"
    << "#define PW_ATTRIBUTES\n"
    << "inline float pw_sum16(const float16 v) {\n"
    << "  const float8 h8 = v.lo + v.hi;\n"
    << "  const float4 h4 = h8.lo + h8.hi;\n"
    << "  const float2 h2 = h4.lo + h4.hi;\n"
    << "  return h2.x + h2.y;\n"
    << "}\n"
    << "inline float pw_max16(const float16 v) {\n"
    << "  const float8 h8 = fmax(v.lo, v.hi);\n"
    << "  const float4 h4 = fmax(h8.lo, h8.hi);\n"
    << "  const float2 h2 = fmax(h4.lo, h4.hi);\n"
    << "  return fmax(h2.x, h2.y);\n"
    << "}\n"
    << "#else\n"
    << "#ifndef PW_GROUP\n#define PW_GROUP 64\n#endif\n"
    << "#ifndef PW_COLUMNS\n#define PW_COLUMNS 0\n#endif\n"
    << "#define PW_ATTRIBUTES __attribute__((reqd_work_group_size(PW_GROUP, 1, 1)))\n"
    << "#endif\n"
    << ParamsStruct();
  // Two kernels, the sweep and the combination of a split channel's parts,
  // each with its barriers at the top level (as one kernel branching on an
  // argument, PoCL 3.1 ran the GPU shape's finish on every work-item).
  const std::string declarations = [&] {
    std::ostringstream d;
    d << UnpackParams() << "  int channel;\n";
    for (size_t k = 0; k < reductions_.size(); ++k) d << "  float pw_a" << k << ";\n";
    d << "#if !PW_CPU_SHAPE\n"
      << "  __local float pw_scratch[" << reductions_.size() << " * PW_GROUP];\n"
      << "  const int pw_lid = (int)get_local_id(0);\n"
      << "#endif\n";
    return d.str();
  }();
  s << "__kernel PW_ATTRIBUTES void " << name_ << "(" << Parameters() << ") {\n"
    << declarations << "#if PW_CPU_SHAPE\n"
    << CpuSweep() << "#elif PW_COLUMNS\n"
    << ColumnSweep() << "#else\n"
    << GpuSweep() << "#endif\n"
    << Finish() << "}\n"
    << "__kernel PW_ATTRIBUTES void " << name_ << "_combine(" << Parameters() << ") {\n"
    << declarations << "#if PW_CPU_SHAPE\n"
    << CombineParts(false) << "#else\n"
    << CombineParts(true) << "#endif\n"
    << Finish() << "}\n";
  return s.str();
}

void ChannelReduceKernel::Launch(Context& ctx, ReduceWorkspace& workspace, int outer,
                                 int channels, int inner,
                                 const std::vector<pointwise::BufferArg>& buffers,
                                 const std::vector<pointwise::ScalarArg>& scalars,
                                 KernelShape shape) const {
  DLC_REQUIRE(outer >= 0 && channels >= 0 && inner >= 0,
              "channel reduce kernel " << name_ << ": negative extent " << outer << " x "
                                       << channels << " x " << inner);
  if (channels == 0) return;
  const bool cpu = UsesCpuShape(ctx, shape);
  const Split split = ChooseSplit(ctx.info(), cpu, outer, channels, inner);
  if (split.parts > 1) workspace.Reserve(ctx, reductions_.size() * size_t(channels) * split.parts);
  const int group = GroupSize(ctx.info());
  const std::string options =
      std::string(cpu ? "-DPW_CPU_SHAPE=1" : "-DPW_CPU_SHAPE=0") +
      (cpu ? "" : " -DPW_GROUP=" + std::to_string(group)) +
      (split.columns ? " -DPW_COLUMNS=1" : "") + TypeOptions(buffers);
  const size_t kCpuGroup = 8;  // small work-groups: one item's loop is the work
  for (int phase = 0; phase < (split.parts > 1 ? 2 : 1); ++phase) {
    // The sweep: a work-item (CPU) or work-group (GPU) per part of each
    // channel; the combination: one per channel.
    cl_kernel kernel =
        KernelFrom(ctx, source_name_, phase == 0 ? name_ : name_ + "_combine", code_, options);
    Bind(kernel,
         {outer, channels, inner, split.parts, split.segments, split.rows_per_part,
          split.segment_length},
         {workspace.partials()}, buffers, scalars);
    const size_t items = size_t(channels) * (phase == 0 ? split.parts : 1);
    if (cpu) {
      ctx.Enqueue(kernel, NDRange(RoundUp(items, kCpuGroup)), NDRange(kCpuGroup));
    } else if (split.columns && phase == 0) {
      const size_t column_items = RoundUp(size_t(channels), size_t(group));
      ctx.Enqueue(kernel, NDRange(column_items * split.parts), NDRange(group));
    } else {
      ctx.Enqueue(kernel, NDRange(items * group), NDRange(group));
    }
  }
}

}  // namespace dlcaffe
