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
DEFINE_bool(build_log, false, "print the whole build error of a type that does not build");

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

int Run() {
  auto ctx = Context::Create(FLAGS_device);
  PrintDevice(ctx->info());
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
  gflags::SetUsageMessage("mma_probe [--device=SPEC] [--throughput] [--repeats=N] [--build_log]");
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
