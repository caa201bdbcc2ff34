// Tensor-core probe: can OpenCL C reach NVIDIA's tensor cores? It issues the
// warp-level instruction mma.sync through inline PTX (src/cl/mma_probe.cl)
// and checks what comes back:
//
//   mma_probe [--device=SPEC] [--throughput] [--repeats=N] [--build_log]
//
// For each input type, f16 and bf16 (mma.sync.aligned.m16n8k16.row.col with
// f32 accumulation) and tf32 (m16n8k8), it builds the kernels for that type
// alone, runs one warp on one tile D = A*B + C and compares D with the
// product computed on the host in double. A and B are distinct multiples of
// 1/8 (C: of 1/64), exact in every input type, and every sum is exact in
// float, so the right answer comes back exactly; a wrong fragment layout
// moves elements rather than changing values, and shows as wrong elements.
// (Except one kind: a permutation of k applied alike to A's columns and B's
// rows leaves A*B unchanged, so that much of the layouts goes unproven; it
// does not matter to a product either.)
// One line per type:
//
//   mma_probe f16: PASS max_abs_err=0
//       the instruction runs, and mma_probe.cl's fragment layouts are right;
//   mma_probe f16: FAIL at row R col C: got X expected Y (max_abs_err=E)
//       it built and ran, but the result is wrong (or running it failed);
//   mma_probe f16: unavailable (first line of the build error)
//       the driver did not compile it (--build_log prints the whole log).
//       On PoCL, and any device not NVIDIA's, every type prints this:
//       inline PTX is for NVIDIA's compiler only.
//
// --throughput then runs, for each type that passed, 8 work-groups of 4
// warps per compute unit, each warp four independent accumulators of
// back-to-back mma.sync, about 0.2 s a run, and prints the fastest of
// --repeats runs as `mma_throughput f16: X TFLOPS` (2*M*N*K flops per
// mma.sync, wall time around enqueue and clFinish): the dense rate that
// mma.sync reaches, the ceiling for a GEMM built on it.
//
// The header line gives the device, its vendor and driver and, where the
// device has cl_nv_device_attribute_query, its compute capability.
// Exit code: 0 when every type that built passed (an unavailable type is
// not a failure), 1 on any FAIL or error, 2 on a usage error.
//
//   mma_probe --wgmma [--device=SPEC] [--build_log]
//
// asks instead whether Hopper's warpgroup instructions (wgmma, which PTX
// takes only under `.target sm_90a`) get through NVIDIA's OpenCL compiler.
// It builds, and never runs, three kernels of src/cl/wgmma_probe.cl: plain
// (no wgmma: which options the driver takes, which target it compiles for),
// fence (wgmma.fence, commit_group and wait_group alone) and mma (one
// wgmma.mma_async m64n8k16 f32 += f16 * f16, A and B by shared-memory
// descriptor), each under the build options "" (the default),
// "-cl-nv-arch sm_90a" and "-cl-nv-arch sm_90". One line per pair:
//
//   wgmma_probe fence [options="-cl-nv-arch sm_90a"]: builds; binary: .target sm_90a, .version 8.5
//       it built; the rest quotes the program binary (PTX text on NVIDIA's
//       driver): its `.target` line, and `.version` (wgmma needs PTX 8.0);
//   wgmma_probe fence [options=""]: does not build (first error line) [CL_...]
//       clBuildProgram failed, with the first line of the build log that
//       says error (else its first line) and the error code; --build_log
//       prints every build log, of builds that failed or not, on stderr.
//
// On a device outside NVIDIA's platform (PoCL: -cl-nv-arch and inline PTX
// mean nothing there) the device line is followed only by
// `wgmma_probe: not an NVIDIA device, skipped`. The exit code is 0 whatever
// builds (this is a question, not a test), 1 on an internal error.
//
//   mma_probe --local_limit [--device=SPEC]
//
// asks how much __local memory one work-group may have: it launches
// src/cl/local_memory_probe.cl with a dynamic __local argument of 16 KiB
// to 228 KiB (a GPU's deepest tile pipelines want about 200) and prints,
// per size, whether the launch ran and gave the right sums, or the error
// the driver returned, beside the device's CL_DEVICE_LOCAL_MEM_SIZE:
//
//   local_limit 64 KiB: refused (CL_OUT_OF_RESOURCES)
//
// The exit code is 0 whatever runs (a question, not a test), 1 on an
// internal error.
#include <CL/cl_ext.h>
#include <gflags/gflags.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/half_conversion.hpp"
#include "dlcaffe/program_cache.hpp"

DEFINE_string(device, "", "OpenCL device (ocl:P:D or flat index)");
DEFINE_bool(throughput, false, "also time back-to-back mma.sync on every compute unit");
DEFINE_int32(repeats, 3, "with --throughput: timed runs per type; the fastest is printed");
DEFINE_bool(build_log, false,
            "print the whole build error of a type that does not build (--wgmma: every build log)");
DEFINE_bool(wgmma, false, "only try to build wgmma (Hopper warpgroup MMA) kernels, and report");
DEFINE_bool(local_limit, false, "only try __local arguments of 16 to 228 KiB, and report");

namespace {

using dlcaffe::Context;

enum class Input { kHalf, kBFloat16, kTf32 };

// The tile is M x N = 16 x 8 for every type; K depends on the type.
constexpr int kM = 16, kN = 8;

struct MmaType {
  const char* name;
  const char* options;  // selects the type in mma_probe.cl
  Input input;
  int k;
};

const MmaType kTypes[] = {{"f16", "-DMMA_F16", Input::kHalf, 16},
                          {"bf16", "-DMMA_BF16", Input::kBFloat16, 16},
                          {"tf32", "-DMMA_TF32", Input::kTf32, 8}};

uint32_t FloatBits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

// x as the instruction reads it (tf32: cvt.rna's rounding of the kernel,
// to nearest with ties away from zero, on the top 19 bits).
float Rounded(float x, Input input) {
  switch (input) {
    case Input::kHalf:
      return dlcaffe::HalfToFloat(dlcaffe::FloatToHalf(x));
    case Input::kBFloat16:
      return dlcaffe::BFloat16ToFloat(dlcaffe::FloatToBFloat16(x));
    case Input::kTf32: {
      const uint32_t bits = (FloatBits(x) + 0x1000u) & ~0x1FFFu;
      float r;
      std::memcpy(&r, &bits, sizeof r);
      return r;
    }
  }
  return x;
}

// `count` distinct values i * scale, i drawn without repeats from
// [-range, range]: a misplaced element cannot go unnoticed by equalling
// the right one.
std::vector<float> DistinctValues(int count, int range, float scale, std::mt19937& rng) {
  std::vector<int> pool(2 * range + 1);
  std::iota(pool.begin(), pool.end(), -range);
  std::shuffle(pool.begin(), pool.end(), rng);
  std::vector<float> values(count);
  for (int i = 0; i < count; ++i) values[i] = pool[i] * scale;
  return values;
}

dlcaffe::BufferPtr Upload(Context& ctx, const void* data, size_t bytes) {
  dlcaffe::BufferPtr buffer = ctx.Allocate(bytes);
  ctx.Write(buffer->mem(), 0, bytes, data);
  return buffer;
}

// A or B as the kernel takes them: float for tf32 (the kernel rounds), the
// bits of the 16-bit types.
dlcaffe::BufferPtr UploadInput(Context& ctx, const std::vector<float>& values, Input input) {
  if (input == Input::kTf32) return Upload(ctx, values.data(), values.size() * sizeof(float));
  std::vector<uint16_t> bits;
  for (float x : values)
    bits.push_back(input == Input::kHalf ? dlcaffe::FloatToHalf(x) : dlcaffe::FloatToBFloat16(x));
  return Upload(ctx, bits.data(), bits.size() * sizeof(uint16_t));
}

// Runs the probe kernel of `type` on random inputs; prints PASS or FAIL and
// returns whether it passed.
bool Check(Context& ctx, const MmaType& type, cl_kernel probe, std::mt19937& rng) {
  const int K = type.k;
  // A row-major M x K, B column-major K x N (b[col * K + row]), C row-major.
  const std::vector<float> a = DistinctValues(kM * K, 128, 1.f / 8, rng);
  const std::vector<float> b = DistinctValues(K * kN, 128, 1.f / 8, rng);
  const std::vector<float> c = DistinctValues(kM * kN, 1024, 1.f / 64, rng);
  dlcaffe::BufferPtr a_buf = UploadInput(ctx, a, type.input);
  dlcaffe::BufferPtr b_buf = UploadInput(ctx, b, type.input);
  dlcaffe::BufferPtr c_buf = Upload(ctx, c.data(), c.size() * sizeof(float));
  dlcaffe::BufferPtr d_buf = ctx.Allocate(kM * kN * sizeof(float));
  ctx.Launch(probe, dlcaffe::NDRange(32), dlcaffe::NDRange(32), a_buf->mem(), b_buf->mem(),
             c_buf->mem(), d_buf->mem());
  std::vector<float> d(kM * kN);
  ctx.Read(d_buf->mem(), 0, d.size() * sizeof(float), d.data());

  // The exact sums are multiples of 1/64, so a misplaced element changes a
  // result by 0 or at least 1/64; a finer difference would be the tensor
  // core's rounding (none is expected).
  const double tolerance = 1.0 / 256;
  double max_err = 0;
  int wrong = -1;
  std::vector<double> expected(kM * kN);
  for (int i = 0; i < kM * kN; ++i) {
    const int row = i / kN, col = i % kN;
    expected[i] = c[i];
    for (int k = 0; k < K; ++k)
      expected[i] +=
          double(Rounded(a[row * K + k], type.input)) * Rounded(b[col * K + k], type.input);
    const double err = std::fabs(d[i] - expected[i]);
    max_err = std::isnan(err) ? err : std::max(max_err, err);
    if (!(err <= tolerance) && wrong < 0) wrong = i;
  }
  if (wrong < 0)
    std::printf("mma_probe %s: PASS max_abs_err=%g\n", type.name, max_err);
  else
    std::printf("mma_probe %s: FAIL at row %d col %d: got %.9g expected %.9g (max_abs_err=%g)\n",
                type.name, wrong / kN, wrong % kN, d[wrong], expected[wrong], max_err);
  return wrong < 0;
}

// The rate of back-to-back mma.sync on the whole device, in TFLOPS.
void Throughput(Context& ctx, const MmaType& type) {
  const size_t local = 128, groups = 8 * static_cast<size_t>(std::max(1, ctx.info().compute_units));
  const size_t items = groups * local, warps = items / 32;
  cl_kernel kernel =
      ctx.Kernel("mma_probe.cl", type.options, std::string("mma_throughput_") + type.name);
  dlcaffe::BufferPtr out = ctx.Allocate(items * sizeof(float));
  // Every A and B element 1/128: 10^6 rounds add about 10^3 to an accumulator.
  const float small = 1.f / 128;
  const cl_uint bits =
      type.input == Input::kHalf ? 0x10001u * dlcaffe::FloatToHalf(small)
      : type.input == Input::kBFloat16 ? 0x10001u * dlcaffe::FloatToBFloat16(small)
                                       : FloatBits(small);
  const auto run = [&](int iterations) {
    const auto start = std::chrono::steady_clock::now();
    ctx.Launch(kernel, dlcaffe::NDRange(items), dlcaffe::NDRange(local), iterations, bits,
               out->mem());
    ctx.Finish();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  int iterations = 256;
  run(iterations);  // the first launch pays for setting up
  while (run(iterations) < 0.05 && iterations < (1 << 26)) iterations *= 2;
  iterations = static_cast<int>(
      std::min<double>(1 << 30, iterations * 0.2 / std::max(1e-6, run(iterations))));
  double best = 1e30;
  for (int i = 0; i < FLAGS_repeats; ++i) best = std::min(best, run(iterations));
  const double flops = 2.0 * kM * kN * type.k * 4 * double(iterations) * warps;
  std::printf("mma_throughput %s: %.1f TFLOPS (%zu warps, %d rounds of 4 m16n8k%d, %.3f s)\n",
              type.name, flops / best * 1e-12, warps, iterations, type.k, best);
}

void PrintDevice(const dlcaffe::DeviceInfo& info) {
  std::string capability = "no compute capability reported";
  cl_uint major = 0, minor = 0;
  if (info.has_extension("cl_nv_device_attribute_query") &&
      clGetDeviceInfo(info.device_id, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof major,
                      &major, nullptr) == CL_SUCCESS &&
      clGetDeviceInfo(info.device_id, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof minor,
                      &minor, nullptr) == CL_SUCCESS)
    capability = "compute capability " + std::to_string(major) + "." + std::to_string(minor);
  std::printf("mma_probe device: %s | vendor %s | driver %s | %s\n", info.name.c_str(),
              info.vendor.c_str(), info.driver_version.c_str(), capability.c_str());
}

// ---- --wgmma: whether wgmma builds at all ----

// The build options tried: the driver's default target, then the one that
// wgmma needs and plain sm_90 as its control (-cl-nv-arch is NVIDIA's).
const char* const kWgmmaOptions[] = {"", "-cl-nv-arch sm_90a", "-cl-nv-arch sm_90"};

// The kernels of wgmma_probe.cl, each built alone under its define.
struct WgmmaKernel {
  const char* name;
  const char* define;
};
const WgmmaKernel kWgmmaKernels[] = {{"plain", "-DWGMMA_PLAIN"},
                                     {"fence", "-DWGMMA_FENCE"},
                                     {"mma", "-DWGMMA_MMA"}};

std::string BuildLogOf(cl_program program, cl_device_id device) {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) !=
          CL_SUCCESS ||
      size == 0)
    return "";
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, &log[0], nullptr) !=
      CL_SUCCESS)
    return "";
  log.resize(std::strlen(log.c_str()));
  return log;
}

std::string Trimmed(const std::string& line) {
  const size_t begin = line.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return line.substr(begin, line.find_last_not_of(" \t\r") + 1 - begin);
}

// The first line of `text` that `keep` accepts (trimmed), or "".
template <typename Keep>
std::string FirstLine(const std::string& text, Keep keep) {
  size_t from = 0;
  while (from < text.size()) {
    size_t end = text.find('\n', from);
    if (end == std::string::npos) end = text.size();
    const std::string line = Trimmed(text.substr(from, end - from));
    if (!line.empty() && keep(line)) return line;
    from = end + 1;
  }
  return "";
}

// The line of a build log that tells why: the first that says error (the
// compiler's or ptxas's), else the first that says anything.
std::string ErrorLine(const std::string& log) {
  std::string line = FirstLine(log, [](const std::string& l) {
    std::string lower = l;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    return lower.find("error") != std::string::npos;
  });
  if (line.empty()) line = FirstLine(log, [](const std::string&) { return true; });
  return line.empty() ? "empty build log" : line;
}

// The program binary of a built program: PTX text on NVIDIA's driver.
std::string ProgramBinary(cl_program program) {
  size_t size = 0;  // one device, so one size
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) !=
          CL_SUCCESS ||
      size == 0)
    return "";
  std::string binary(size, '\0');
  unsigned char* data = reinterpret_cast<unsigned char*>(&binary[0]);
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr) != CL_SUCCESS)
    return "";
  return binary;
}

// What the binary says of its target: "binary: .target sm_90a, .version 8.5".
std::string DescribeBinary(const std::string& binary) {
  const auto directive = [&](const char* name) {
    return FirstLine(binary, [&](const std::string& l) { return l.rfind(name, 0) == 0; });
  };
  const std::string target = directive(".target"), version = directive(".version");
  if (target.empty() && version.empty())
    return "binary (" + std::to_string(binary.size()) + " bytes) has no .target line";
  return "binary: " + (target.empty() ? std::string("no .target line") : target) +
         (version.empty() ? "" : ", " + version);
}

// Builds every kernel of wgmma_probe.cl under every option string, straight
// through the OpenCL API rather than the program cache: a rejected option
// must come back as a result, the build log is wanted even on success, and
// no binary may come from the disk cache. Returns the exit code.
int RunWgmma(Context& ctx) {
  const dlcaffe::DeviceInfo& info = ctx.info();
  if (info.platform_name.find("NVIDIA") == std::string::npos) {
    std::printf("wgmma_probe: not an NVIDIA device, skipped\n");
    return 0;
  }
  const std::string text = dlcaffe::ProgramCache::SourceText("wgmma_probe.cl");
  const char* source = text.c_str();
  const size_t length = text.size();
  cl_device_id device = ctx.device();
  for (const WgmmaKernel& kernel : kWgmmaKernels) {
    for (const char* user_options : kWgmmaOptions) {
      const std::string options = std::string(user_options) + " " + kernel.define;
      cl_int err = CL_SUCCESS;
      cl_program program = clCreateProgramWithSource(ctx.cl(), 1, &source, &length, &err);
      if (err != CL_SUCCESS) {
        std::fprintf(stderr, "wgmma_probe: cannot create a program: %s\n",
                     dlcaffe::ClErrorName(err));
        return 1;
      }
      err = clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
      const std::string log = BuildLogOf(program, device);
      std::printf("wgmma_probe %s [options=\"%s\"]: ", kernel.name, user_options);
      if (err == CL_SUCCESS)
        std::printf("builds; %s\n", DescribeBinary(ProgramBinary(program)).c_str());
      else
        std::printf("does not build (%s) [%s]\n", ErrorLine(log).c_str(),
                    dlcaffe::ClErrorName(err));
      std::fflush(stdout);
      if (FLAGS_build_log && !log.empty())
        std::fprintf(stderr, "---- build log of %s [options=\"%s\"]:\n%s\n", kernel.name,
                     user_options, log.c_str());
      clReleaseProgram(program);
    }
  }
  return 0;
}

// Launches local_memory_probe.cl with each size of __local argument,
// straight through the OpenCL API, so that a refused launch comes back as a
// result. Returns the exit code.
int RunLocalLimit(Context& ctx) {
  std::printf("local_limit: CL_DEVICE_LOCAL_MEM_SIZE %llu bytes\n",
              static_cast<unsigned long long>(ctx.info().local_mem_bytes));
  cl_kernel kernel = ctx.Kernel("local_memory_probe.cl", "", "local_memory_probe");
  const size_t group = std::min<size_t>(256, ctx.info().max_work_group_size);
  cl_int err = CL_SUCCESS;
  cl_mem out = clCreateBuffer(ctx.cl(), CL_MEM_READ_WRITE, group * sizeof(float), nullptr, &err);
  if (err != CL_SUCCESS) {
    std::fprintf(stderr, "local_limit: cannot allocate: %s\n", dlcaffe::ClErrorName(err));
    return 1;
  }
  for (int kib : {16, 32, 40, 44, 46, 47, 48, 64, 96, 128, 160, 200, 227, 228}) {
    const int n = kib * 1024 / int(sizeof(float));
    clSetKernelArg(kernel, 0, size_t(kib) * 1024, nullptr);
    clSetKernelArg(kernel, 1, sizeof(n), &n);
    clSetKernelArg(kernel, 2, sizeof(out), &out);
    std::vector<float> sums(group, -1.f);
    err = clEnqueueNDRangeKernel(ctx.queue(), kernel, 1, nullptr, &group, &group, 0, nullptr,
                                 nullptr);
    if (err == CL_SUCCESS) err = clFinish(ctx.queue());
    if (err == CL_SUCCESS)
      err = clEnqueueReadBuffer(ctx.queue(), out, CL_TRUE, 0, group * sizeof(float), sums.data(),
                                0, nullptr, nullptr);
    std::printf("local_limit %d KiB: ", kib);
    if (err != CL_SUCCESS) {
      std::printf("refused (%s)\n", dlcaffe::ClErrorName(err));
      continue;
    }
    double expected = 0;  // work-item 0 sums buf[n - 1 - i] for i = 0, group, ...
    for (int i = 0; i < n; i += int(group)) expected += (n - 1 - i) % 1024;
    const bool right = sums[0] == float(expected);
    std::printf(right ? "runs\n" : "runs, WRONG sums (%g, expected %g)\n", sums[0], expected);
    std::fflush(stdout);
  }
  clReleaseMemObject(out);
  return 0;
}

int Run() {
  auto ctx = Context::Create(FLAGS_device);
  PrintDevice(ctx->info());
  if (FLAGS_wgmma) return RunWgmma(*ctx);
  if (FLAGS_local_limit) return RunLocalLimit(*ctx);
  std::mt19937 rng(20240607);
  bool all_passed = true;
  for (const MmaType& type : kTypes) {
    cl_kernel probe = nullptr;
    try {
      probe = ctx->Kernel("mma_probe.cl", type.options, std::string("mma_probe_") + type.name);
    } catch (const dlcaffe::Error& e) {
      std::printf("mma_probe %s: unavailable (%s)\n", type.name, dlcaffe::FirstBuildLogLine(e.what()).c_str());
      if (FLAGS_build_log) std::fprintf(stderr, "%s\n", e.what());
      continue;
    }
    bool passed = false;
    try {
      passed = Check(*ctx, type, probe, rng);
    } catch (const dlcaffe::Error& e) {  // enqueueing or reading failed
      std::printf("mma_probe %s: FAIL (%s)\n", type.name, dlcaffe::FirstBuildLogLine(e.what()).c_str());
    }
    all_passed &= passed;
    if (passed && FLAGS_throughput) {
      try {
        Throughput(*ctx, type);
      } catch (const dlcaffe::Error& e) {
        std::printf("mma_throughput %s: error (%s)\n", type.name, dlcaffe::FirstBuildLogLine(e.what()).c_str());
        all_passed = false;
      }
    }
    std::fflush(stdout);
  }
  return all_passed ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "mma_probe [--device=SPEC] [--throughput] [--repeats=N] [--build_log]\n"
      "  mma_probe --wgmma [--device=SPEC] [--build_log]\n"
      "  mma_probe --local_limit [--device=SPEC]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc > 1 || FLAGS_repeats < 1) {
    std::fprintf(stderr, "usage: %s\n  (no positional arguments; --repeats >= 1)\n",
                 gflags::ProgramUsage());
    return 2;
  }
  try {
    return Run();
  } catch (const dlcaffe::Error& e) {
    std::fprintf(stderr, "mma_probe: %s\n", e.what());
    return 1;
  }
}
