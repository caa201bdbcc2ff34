#include "core/pointwise_kernel.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

#include "core/cache_files.hpp"
#include "core/gemm_config.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

bool UsesCpuShape(Context& ctx, KernelShape shape) {
  if (shape != KernelShape::kDevice) return shape == KernelShape::kCpu;
  return ctx.cpu_shaped_kernels();
}

int CpuShapeChunk(int count) {
  const int kTargetItems = 64;       // several per core: the items are uneven
  const int kMinChunkFloats = 4096;  // long next to a work-item's overhead
  const int chunk = std::max(kMinChunkFloats, (count + kTargetItems - 1) / kTargetItems);
  return (chunk + 15) / 16 * 16;
}

namespace pointwise {

namespace {

bool IsIdentifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) return false;
  return true;
}

const char* KindName(Arg::Kind kind) {
  switch (kind) {
    case Arg::kIn: return "In";
    case Arg::kOut: return "Out";
    case Arg::kInOut: return "InOut";
    case Arg::kChannel: return "Channel";
    case Arg::kChannelOut: return "ChannelOut";
    case Arg::kScalar: return "Scalar";
    case Arg::kIntScalar: return "IntScalar";
  }
  return "?";
}

}  // namespace

GeneratedKernel::GeneratedKernel(const std::string& generator, const std::string& name,
                                 std::vector<Arg> args, const std::vector<Arg::Kind>& allowed,
                                 std::vector<std::string> fixed_ints,
                                 std::vector<std::string> fixed_buffers)
    : generator_(generator),
      name_(name),
      args_(std::move(args)),
      fixed_ints_(std::move(fixed_ints)),
      fixed_buffers_(std::move(fixed_buffers)) {
  DLC_REQUIRE(IsIdentifier(name_) && name_.compare(0, 3, "pw_") != 0,
              generator_ << " kernel name '" << name_
                         << "' must be an OpenCL identifier not starting with pw_");
  std::set<std::string> names;
  for (const Arg& a : args_) {
    DLC_REQUIRE(IsIdentifier(a.name) && a.name.compare(0, 3, "pw_") != 0 && a.name != "real",
                generator_ << " kernel " << name_ << ": argument name '" << a.name
                           << "' must be an OpenCL identifier, not 'real' nor starting with pw_");
    DLC_REQUIRE(names.insert(a.name).second,
                generator_ << " kernel " << name_ << ": two arguments named '" << a.name << "'");
    DLC_REQUIRE(std::find(allowed.begin(), allowed.end(), a.kind) != allowed.end(),
                generator_ << " kernel " << name_ << ": argument '" << a.name << "' is a "
                           << KindName(a.kind) << ", which this generator does not take");
    if (a.is_buffer()) {
      ++num_buffers_;
    } else {
      ++num_scalars_;
    }
  }
}

void GeneratedKernel::SetSource(std::string source) {
  source_ = std::move(source);
  char hash[24];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(Fnv1a(source_)));
  source_name_ = "generated/" + name_ + "-" + hash + ".cl";
  RegisterKernelSource(source_name_, source_);
}

cl_kernel GeneratedKernel::Kernel(Context& ctx, bool cpu_shape, const std::string& code,
                                  const std::string& options) const {
  return KernelFrom(ctx, source_name_, name_, code,
                    (cpu_shape ? "-DPW_CPU_SHAPE=1" : "-DPW_CPU_SHAPE=0") + options);
}

cl_kernel GeneratedKernel::KernelFrom(Context& ctx, const std::string& source_name,
                                      const std::string& kernel, const std::string& code,
                                      const std::string& options) const {
  try {
    return ctx.Kernel(source_name, options, kernel);
  } catch (const Error& e) {
    DLC_FAIL("the generated " << generator_ << " kernel '" << kernel
                              << "' does not build. Its code:\n" << code << "\n" << e.what());
  }
}

void GeneratedKernel::Bind(cl_kernel kernel, const std::vector<int>& fixed_ints,
                           const std::vector<cl_mem>& fixed_buffers,
                           const std::vector<BufferArg>& buffers,
                           const std::vector<ScalarArg>& scalars) const {
  CHECK_EQ(fixed_ints.size(), fixed_ints_.size()) << "generated kernel " << name_;
  CHECK_EQ(fixed_buffers.size(), fixed_buffers_.size()) << "generated kernel " << name_;
  CHECK_EQ(static_cast<int>(buffers.size()), num_buffers_)
      << "buffers bound to generated kernel " << name_;
  size_t b = 0;
  for (const Arg& a : args_) {
    if (!a.is_buffer()) continue;
    const StorageType type = buffers[b++].type;
    DLC_REQUIRE(type == StorageType::kFloat32 ||
                    std::find(typed_kinds_.begin(), typed_kinds_.end(), a.kind) !=
                        typed_kinds_.end(),
                generator_ << " kernel " << name_ << " takes buffer '" << a.name
                           << "' in float32 only, got " << StorageTypeName(type));
  }
  cl_uint index = 0;
  for (cl_mem mem : fixed_buffers)
    DLC_CL_CHECK(clSetKernelArg(kernel, index++, sizeof(cl_mem), &mem));
  for (const BufferArg& buffer : buffers)
    DLC_CL_CHECK(clSetKernelArg(kernel, index++, sizeof(cl_mem), &buffer.mem));
  const std::vector<int> words = ParamsWords(fixed_ints, buffers, scalars);
  DLC_CL_CHECK(clSetKernelArg(kernel, index, words.size() * sizeof(int), words.data()));
}

std::vector<int> GeneratedKernel::ParamsWords(const std::vector<int>& fixed_ints,
                                              const std::vector<BufferArg>& buffers,
                                              const std::vector<ScalarArg>& scalars) const {
  CHECK_EQ(static_cast<int>(buffers.size()), num_buffers_)
      << "buffers bound to generated kernel " << name_;
  CHECK_EQ(static_cast<int>(scalars.size()), num_scalars_)
      << "scalars bound to generated kernel " << name_;
  // The struct, 4-byte words in the order ParamsStruct declares them.
  static_assert(sizeof(int) == 4 && sizeof(float) == 4, "4-byte struct members");
  std::vector<int> words(fixed_ints);
  words.reserve(words.size() + 2 * args_.size());
  size_t b = 0, s = 0;
  for (const Arg& a : args_) {
    if (a.is_buffer()) {
      const BufferArg& buffer = buffers[b++];
      words.push_back(buffer.offset);
      if (a.per_channel()) words.push_back(buffer.stride);
    } else {
      const ScalarArg& scalar = scalars[s++];
      CHECK_EQ(scalar.is_int, a.kind == Arg::kIntScalar)
          << "scalar " << a.name << " of generated kernel " << name_;
      int word = scalar.int_value;
      if (!scalar.is_int) std::memcpy(&word, &scalar.value, sizeof(word));
      words.push_back(word);
    }
  }
  return words;
}

namespace {

// The storage macros of buffer argument `name` (GeneratedKernel::ParamsStruct):
// its type's own (STORAGE_*_<code>, from the storage types' table), the
// code given by -DPW_TYPE__name (TypeOptions), float32 without it.
std::string StorageMacros(const std::string& name) {
  const std::string type = "PW_TYPE__" + name, p = BufferName(name);
  std::ostringstream s;
  s << "#ifndef " << type << "\n#define " << type << " 0\n#endif\n";
  const auto macro = [&](const char* ours, const char* params, const char* storage,
                         const char* args) {
    s << "#define PW_" << ours << "__" << name << params << " STORAGE_CAT(STORAGE_" << storage
      << "_, " << type << ")" << args << "\n";
  };
  macro("T", "", "ELEM", "");
  macro("LOAD", "(i)", "LOAD", ("(" + p + ", i)").c_str());
  macro("STORE", "(v, i)", "STORE", ("(" + p + ", i, v)").c_str());
  macro("LOAD16", "(i)", "LOAD16", ("(" + p + ", i)").c_str());
  macro("STORE16", "(v, i)", "STORE16", ("(" + p + ", i, v)").c_str());
  return s.str();
}

}  // namespace

std::string GeneratedKernel::TypeOptions(const std::vector<BufferArg>& buffers) const {
  std::string options;
  size_t b = 0;
  for (const Arg& a : args_) {
    if (!a.is_buffer() || b >= buffers.size()) continue;
    const StorageType type = buffers[b++].type;
    if (type == StorageType::kFloat32) continue;
    options += StorageOption("PW_TYPE__" + a.name, type);
  }
  return options;
}

std::string GeneratedKernel::ParamsStruct() const {
  std::ostringstream s;
  for (const Arg& a : args_)
    if (a.is_buffer()) s << StorageMacros(a.name);
  s << "typedef struct {\n";
  for (const std::string& name : fixed_ints_) s << "  int " << name << ";\n";
  for (const Arg& a : args_) {
    if (a.is_buffer()) {
      s << "  int " << OffsetName(a.name) << ";\n";
      if (a.per_channel()) s << "  int " << StrideName(a.name) << ";\n";
    } else {
      s << "  " << (a.kind == Arg::kIntScalar ? "int " : "float ") << a.name << ";\n";
    }
  }
  s << "} pw_params;\n";
  return s.str();
}

std::string GeneratedKernel::Parameters() const {
  std::ostringstream s;
  const char* separator = "\n    ";
  for (const std::string& name : fixed_buffers_) {
    s << separator << name;
    separator = ",\n    ";
  }
  for (const Arg& a : args_) {
    if (!a.is_buffer()) continue;
    s << separator << "__global " << (a.kind == Arg::kIn || a.kind == Arg::kChannel ? "const " : "")
      << "PW_T__" << a.name << "* " << BufferName(a.name);
    separator = ",\n    ";
  }
  s << separator << "const pw_params pw_p";
  return s.str();
}

std::string GeneratedKernel::UnpackParams() const {
  std::ostringstream s;
  for (const std::string& name : fixed_ints_)
    s << "  const int " << name << " = pw_p." << name << ";\n";
  for (const Arg& a : args_) {
    if (a.is_buffer()) {
      s << "  " << BufferName(a.name) << " += pw_p." << OffsetName(a.name) << ";\n";
      if (a.per_channel())
        s << "  const int " << StrideName(a.name) << " = pw_p." << StrideName(a.name) << ";\n";
    } else {
      s << "  const " << (a.kind == Arg::kIntScalar ? "int " : "float ") << a.name << " = pw_p."
        << a.name << ";\n";
    }
  }
  return s.str();
}

std::string GeneratedKernel::LoadChannelValues(const std::string& channel_expr,
                                               const std::string& guard) const {
  std::ostringstream s;
  for (const Arg& a : args_) {
    if (a.kind != Arg::kChannel) continue;
    const std::string load =
        "PW_LOAD__" + a.name + "((" + channel_expr + ") * " + StrideName(a.name) + ")";
    s << "  const float " << ChannelValueName(a.name) << " = "
      << (guard.empty() ? load : "(" + guard + ") ? " + load + " : 0.f") << ";\n";
  }
  return s.str();
}

}  // namespace pointwise

using pointwise::Arg;
using pointwise::BufferName;
using pointwise::ChannelValueName;
using pointwise::StrideName;

namespace {

const int kGpuItems = 4;  // elements per work-item in the GPU shape

// One element's work: loads into `real` variables, the body, stores. `width`
// 16 reads and writes float16 vectors at pw_i, 1 plain floats.
std::string ElementBlock(const std::vector<Arg>& args, const std::string& body, int width,
                         const std::string& indent) {
  const bool vector = width > 1;
  const std::string real = vector ? "float16" : "float";
  auto load = [&](const std::string& name) {
    return (vector ? "PW_LOAD16__" : "PW_LOAD__") + name + "(pw_i)";
  };
  std::ostringstream s;
  s << indent << "{\n" << indent << "  typedef " << real << " real;\n";
  for (const Arg& a : args) {
    switch (a.kind) {
      case Arg::kIn:
        s << indent << "  const real " << a.name << " = " << load(a.name) << ";\n";
        break;
      case Arg::kInOut:
        s << indent << "  real " << a.name << " = " << load(a.name) << ";\n";
        break;
      case Arg::kOut:
        s << indent << "  real " << a.name << " = (real)0.f;\n";
        break;
      case Arg::kChannel:
        s << indent << "  const real " << a.name << " = (real)" << ChannelValueName(a.name)
          << ";\n";
        break;
      default:
        break;
    }
  }
  s << indent << "  {\n" << body << "\n" << indent << "  }\n";
  for (const Arg& a : args) {
    if (a.kind != Arg::kOut && a.kind != Arg::kInOut) continue;
    s << indent << "  " << (vector ? "PW_STORE16__" : "PW_STORE__") << a.name << "(" << a.name
      << ", pw_i);\n";
  }
  s << indent << "}\n";
  return s.str();
}

// GPU shape: work-item t takes the elements t + k * (global size), k <
// kGpuItems, so that each load is coalesced across the work-items, and loads
// them all before it computes any: one float in flight per work-item leaves
// a GPU's memory mostly idle (docs/benchmarks.md, M8). Then the body for each
// element, then the stores (in place is safe: an element is read before it
// is written, by the same work-item).
std::string GpuElements(const std::vector<Arg>& args, const std::string& body) {
  std::ostringstream s;
  s << "  const int pw_first = (int)get_global_id(0), pw_step = (int)get_global_size(0);\n"
    << "  if (pw_first >= pw_count) return;\n";
  auto value = [](char kind, int k, const std::string& name) {
    return std::string("pw_") + kind + std::to_string(k) + "__" + name;
  };
  for (int k = 0; k < kGpuItems; ++k) {
    const std::string i = "pw_i" + std::to_string(k);
    s << "  const int " << i << " = pw_first + " << k << " * pw_step;\n";
    for (const Arg& a : args)
      if (a.kind == Arg::kIn || a.kind == Arg::kInOut || a.kind == Arg::kChannel)
        s << "  float " << value('v', k, a.name) << " = 0.f;\n";
    s << "  if (" << i << " < pw_count) {\n";
    for (const Arg& a : args) {
      if (a.kind == Arg::kIn || a.kind == Arg::kInOut) {
        s << "    " << value('v', k, a.name) << " = PW_LOAD__" << a.name << "(" << i << ");\n";
      } else if (a.kind == Arg::kChannel) {
        s << "    " << value('v', k, a.name) << " = PW_LOAD__" << a.name << "(((" << i
          << " / pw_inner) % pw_channels) * " << StrideName(a.name) << ");\n";
      }
    }
    s << "  }\n";
  }
  for (int k = 0; k < kGpuItems; ++k) {
    for (const Arg& a : args)
      if (a.kind == Arg::kOut || a.kind == Arg::kInOut)
        s << "  float " << value('r', k, a.name) << ";\n";
    s << "  {\n    typedef float real;\n";
    for (const Arg& a : args) {
      if (a.kind == Arg::kIn || a.kind == Arg::kChannel) {
        s << "    const real " << a.name << " = " << value('v', k, a.name) << ";\n";
      } else if (a.kind == Arg::kInOut) {
        s << "    real " << a.name << " = " << value('v', k, a.name) << ";\n";
      } else if (a.kind == Arg::kOut) {
        s << "    real " << a.name << " = 0.f;\n";
      }
    }
    s << "    {\n" << body << "\n    }\n";
    for (const Arg& a : args)
      if (a.kind == Arg::kOut || a.kind == Arg::kInOut)
        s << "    " << value('r', k, a.name) << " = " << a.name << ";\n";
    s << "  }\n";
  }
  for (int k = 0; k < kGpuItems; ++k) {
    const std::string i = "pw_i" + std::to_string(k);
    s << "  if (" << i << " < pw_count) {\n";
    for (const Arg& a : args)
      if (a.kind == Arg::kOut || a.kind == Arg::kInOut)
        s << "    PW_STORE__" << a.name << "(" << value('r', k, a.name) << ", " << i << ");\n";
    s << "  }\n";
  }
  return s.str();
}

}  // namespace

PointwiseKernel::PointwiseKernel(const std::string& name, std::vector<Arg> args,
                                 const std::string& body)
    : GeneratedKernel("pointwise", name, std::move(args),
                      {Arg::kIn, Arg::kOut, Arg::kInOut, Arg::kChannel, Arg::kScalar,
                       Arg::kIntScalar},
                      {"pw_count", "pw_chunk", "pw_channels", "pw_inner"}),
      body_(body) {
  typed_kinds_ = {Arg::kIn, Arg::kOut, Arg::kInOut, Arg::kChannel};
  const bool broadcast = std::any_of(args_.begin(), args_.end(),
                                     [](const Arg& a) { return a.kind == Arg::kChannel; });
  std::ostringstream s;
  s << "// Generated by src/core/pointwise_kernel.cpp: pointwise kernel " << name_ << ".\n"
    << "#ifndef PW_CPU_SHAPE\n#define PW_CPU_SHAPE 0\n#endif\n"
    << ParamsStruct() << "__kernel void " << name_ << "(" << Parameters() << ") {\n"
    << UnpackParams();
  // CPU shape: work-item k takes the elements [k * chunk, (k + 1) * chunk) in
  // float16 vectors and a scalar tail; with per-channel inputs, row by row
  // (a row = the inner elements of one channel), each row's values loaded
  // once.
  s << "#if PW_CPU_SHAPE\n"
    << "  const int pw_begin = (int)get_global_id(0) * pw_chunk;\n"
    << "  const int pw_end = min(pw_count, pw_begin + pw_chunk);\n";
  if (broadcast) {
    s << "  for (int pw_i = pw_begin; pw_i < pw_end;) {\n"
      << "    const int pw_row = pw_i / pw_inner;\n"
      << "    const int pw_row_end = min(pw_end, (pw_row + 1) * pw_inner);\n"
      << LoadChannelValues("pw_row % pw_channels")
      << "    for (; pw_i + 16 <= pw_row_end; pw_i += 16)\n"
      << ElementBlock(args_, body_, 16, "    ")
      << "    for (; pw_i < pw_row_end; ++pw_i)\n"
      << ElementBlock(args_, body_, 1, "    ") << "  }\n";
  } else {
    s << "  int pw_i = pw_begin;\n"
      << "  for (; pw_i + 16 <= pw_end; pw_i += 16)\n"
      << ElementBlock(args_, body_, 16, "  ")
      << "  for (; pw_i < pw_end; ++pw_i)\n"
      << ElementBlock(args_, body_, 1, "  ");
  }
  s << "#else\n" << GpuElements(args_, body_) << "#endif\n}\n";
  SetSource(s.str());

  if (!broadcast) {
    // The batched form's kernel parameters: per segment a pointer per buffer
    // argument and the struct's words, and the segments' ends.
    const size_t words = fixed_ints_.size() + num_buffers_ + num_scalars_;
    const size_t kGuaranteedBytes = 1024;  // CL_DEVICE_MAX_PARAMETER_SIZE's minimum
    for (int n = kMaxManySegments; n >= 2 && segments_per_launch_ == 1; --n)
      if (n * (num_buffers_ * sizeof(cl_mem) + (words + 1) * sizeof(int)) <= kGuaranteedBytes)
        segments_per_launch_ = n;
  }
  if (segments_per_launch_ > 1) {
    const std::string many = ManySource();
    char hash[24];
    std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(Fnv1a(many)));
    many_source_name_ = "generated/" + name_ + "_many-" + hash + ".cl";
    RegisterKernelSource(many_source_name_, many);
  }
}

// The batched form: work-item g of the launch belongs to the first segment
// whose end exceeds g; its buffers are that segment's pointers, moved to its
// offsets, and its scalars that segment's. One element per work-item.
std::string PointwiseKernel::ManySource() const {
  const int n = segments_per_launch_;
  auto nth = [](int k, const std::string& name) {
    return "pw_s" + std::to_string(k) + "_" + BufferName(name);
  };
  std::ostringstream s;
  s << "// Generated by src/core/pointwise_kernel.cpp: pointwise kernel " << name_
    << ", up to " << n << " segments per launch.\n"
    << ParamsStruct() << "typedef struct {\n  int pw_ends[" << n << "];\n  pw_params pw_segment["
    << n << "];\n} pw_many_params;\n"
    << "__kernel void " << name_ << "_many(";
  const char* separator = "\n    ";
  for (int k = 0; k < n; ++k) {
    for (const Arg& a : args_) {
      if (!a.is_buffer()) continue;
      s << separator << "__global " << (a.kind == Arg::kIn ? "const " : "") << "PW_T__" << a.name
        << "* " << nth(k, a.name);
      separator = ",\n    ";
    }
  }
  s << separator << "const pw_many_params pw_m) {\n"
    << "  const int pw_g = (int)get_global_id(0);\n"
    << "  if (pw_g >= pw_m.pw_ends[" << n - 1 << "]) return;\n"
    << "  int pw_s = 0;\n"
    << "  while (pw_g >= pw_m.pw_ends[pw_s]) ++pw_s;\n"
    << "  const int pw_i = pw_g - (pw_s > 0 ? pw_m.pw_ends[pw_s - 1] : 0);\n"
    << "  const pw_params pw_p = pw_m.pw_segment[pw_s];\n";
  for (const Arg& a : args_) {
    if (!a.is_buffer()) continue;
    s << "  __global " << (a.kind == Arg::kIn ? "const " : "") << "PW_T__" << a.name << "* "
      << BufferName(a.name) << " =";
    for (int k = 0; k + 1 < n; ++k) s << " pw_s == " << k << " ? " << nth(k, a.name) << " :";
    s << " " << nth(n - 1, a.name) << ";\n";
  }
  s << UnpackParams() << ElementBlock(args_, body_, 1, "  ") << "}\n";
  return s.str();
}

void PointwiseKernel::Launch(Context& ctx, int count,
                             const std::vector<pointwise::BufferArg>& buffers,
                             const std::vector<pointwise::ScalarArg>& scalars,
                             ChannelAxis channel_axis, KernelShape shape) const {
  if (count <= 0) return;
  DLC_REQUIRE(channel_axis.channels > 0 && channel_axis.inner > 0,
              "pointwise kernel " << name_ << ": channel axis " << channel_axis.channels
                                  << " x " << channel_axis.inner << " must be positive");
  const bool cpu = UsesCpuShape(ctx, shape);
  cl_kernel kernel = Kernel(ctx, cpu, body_, TypeOptions(buffers));
  const int chunk = cpu ? CpuShapeChunk(count) : 1;
  Bind(kernel, {count, chunk, channel_axis.channels, channel_axis.inner}, {}, buffers, scalars);
  if (cpu) {
    const size_t kGroup = 8;  // small work-groups: one item's loop is the work
    const size_t items = (size_t(count) + chunk - 1) / chunk;
    ctx.Enqueue(kernel, NDRange(RoundUp(items, kGroup)), NDRange(kGroup));
  } else {
    const size_t items = (size_t(count) + kGpuItems - 1) / kGpuItems;
    ctx.Enqueue(kernel, NDRange(RoundUp(items, Context::kElementwiseGroup)),
                NDRange(Context::kElementwiseGroup));
  }
}

void PointwiseKernel::LaunchMany(Context& ctx, const std::vector<pointwise::Segment>& segments,
                                 KernelShape shape) const {
  const bool cpu = UsesCpuShape(ctx, shape);
  const int n = segments_per_launch_;
  std::vector<const pointwise::Segment*> batch;
  auto launch_batch = [&]() {
    if (batch.empty()) return;
    if (batch.size() == 1) {
      Launch(ctx, batch[0]->count, batch[0]->buffers, batch[0]->scalars, {}, shape);
      batch.clear();
      return;
    }
    cl_kernel kernel = KernelFrom(ctx, many_source_name_, name_ + "_many", body_,
                                  "-DPW_CPU_SHAPE=0");
    cl_uint index = 0;
    std::vector<int> ends, words;
    long long total = 0;
    for (int k = 0; k < n; ++k) {
      // Unused places repeat the last segment, past every end.
      const pointwise::Segment& segment = *batch[std::min<size_t>(k, batch.size() - 1)];
      const std::vector<int> segment_words =
          ParamsWords({segment.count, 1, 1, 1}, segment.buffers, segment.scalars);
      words.insert(words.end(), segment_words.begin(), segment_words.end());
      for (const pointwise::BufferArg& buffer : segment.buffers)
        DLC_CL_CHECK(clSetKernelArg(kernel, index++, sizeof(cl_mem), &buffer.mem));
      if (k < static_cast<int>(batch.size())) total += segment.count;
      ends.push_back(static_cast<int>(total));
    }
    words.insert(words.begin(), ends.begin(), ends.end());
    DLC_CL_CHECK(clSetKernelArg(kernel, index, words.size() * sizeof(int), words.data()));
    ctx.Enqueue(kernel, NDRange(RoundUp(static_cast<size_t>(total), Context::kElementwiseGroup)),
                NDRange(Context::kElementwiseGroup));
    batch.clear();
  };
  for (const pointwise::Segment& segment : segments) {
    if (segment.count <= 0) continue;
    // The batched form is built for float buffers only.
    const bool all_float =
        std::all_of(segment.buffers.begin(), segment.buffers.end(), [](const auto& b) {
          return b.type == StorageType::kFloat32;
        });
    if (cpu || n == 1 || segment.count >= kSmallSegment || !all_float) {
      Launch(ctx, segment.count, segment.buffers, segment.scalars, {}, shape);
      continue;
    }
    batch.push_back(&segment);
    if (static_cast<int>(batch.size()) == n) launch_batch();
  }
  launch_batch();
}

}  // namespace dlcaffe
