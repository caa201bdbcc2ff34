// GEMM benchmark: GFLOP/s of Gemm() (or one configuration of the kernel family)
// for chosen shapes on one device.
//
//   gemm_bench [--device=SPEC] [--config=auto|cpu|dot|gpu|wgmma] [--iterations=N] [--peak]
//              [--shapes="M,N,K[,ta,tb];..."] [--mr= --nr= --wg_m= --wg_n= --tk=
//              --k_slices= --pack_a= --pack_b= --vector_loads= --groups_per_unit=
//              --stages=] (overrides of the configuration)
//
// `auto` is what Gemm() runs: a winner stored by `dlcaffe tune`, else the rule.
// Each shape is timed over --iterations back-to-back calls with one finish at
// the end (as layers run), after one warm-up call that builds the kernels; the
// fastest of --repeats such rounds is printed, as GFLOP/s of wall time and as
// GFLOP per CPU-second of the process (steadier on a shared machine; on an
// idle machine with T threads busy it is about wall GFLOP/s / T).
#include <gflags/gflags.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../src/core/gemm_config.hpp"
#include "../src/core/gemm_wgmma.hpp"
#include "../src/core/gemm_wgmma.hpp"
#include "../src/core/matrix_engine.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/half_conversion.hpp"
#include "dlcaffe/math.hpp"

DEFINE_string(device, "", "OpenCL device (ocl:P:D or flat index)");
DEFINE_string(config, "auto",
              "auto (the dispatcher's choice), cpu, dot (C = A B^T only), gpu or wgmma "
              "(Hopper; 128x128x16 in 6 stages; --mr, --nr, --tk, --stages and --in_flight "
              "name another of gemm_wgmma.ptx)");
DEFINE_int32(mr, 0, "override the register block rows (register shape)");
DEFINE_int32(nr, 0, "override the register block columns (register shape)");
DEFINE_int32(wg_m, 0, "override the work-group rows (GPU shape)");
DEFINE_int32(wg_n, 0, "override the work-group columns (GPU shape)");
DEFINE_int32(tk, 0, "override the k depth of a __local tile (GPU shape)");
DEFINE_int32(k_slices, -1, "override the split-K slices (GPU shape; 0 = automatic)");
DEFINE_int32(pack_a, -1, "override packing of A (0/1, register shape)");
DEFINE_int32(pack_b, -1, "override packing of B (0/1, register shape)");
DEFINE_int32(vector_loads, -1, "override float4 tile fetches (0/1, GPU shape)");
DEFINE_int32(stages, -1,
             "override the tensor-core cp.async stages (GPU shape: 0 = as many as fit, 1 = none)");
DEFINE_int32(groups_per_unit, 0, "override the automatic split-K's work-groups per unit (GPU shape)");
DEFINE_int32(in_flight, -1, "override the wgmma form's groups of products in flight (0/1)");
DEFINE_int32(iterations, 10, "timed calls per shape");
DEFINE_string(math, "float32",
              "what the products' inputs may be rounded to: float32, tf32, float16 or bfloat16 "
              "(the last three run on the device's matrix engine where it has one)");
DEFINE_string(storage, "float32", "how A, B and C are stored: float32, float16 or bfloat16");
DEFINE_bool(peak, false,
            "first measure the device's FMA throughput (fma_peak.cl) and print each "
            "shape's GFLOP/s also as a share of it");
DEFINE_int32(repeats, 3, "timed rounds per shape; the fastest is reported (the CPU is shared)");
DEFINE_string(shapes,
              "1024,1024,1024;2048,2048,2048;50,4096,500;50,500,4096,0,1;500,4096,50,1,0;"
              "500,64,800;64,500,800,0,1;500,800,64,1,0;20,36864,25;20,25,36864,0,1",
              "semicolon-separated M,N,K[,trans_a,trans_b]");

namespace {

struct Shape {
  int M, N, K;
  bool ta = false, tb = false;
};

std::vector<Shape> ParseShapes(const std::string& text) {
  std::vector<Shape> shapes;
  std::stringstream all(text);
  std::string item;
  while (std::getline(all, item, ';')) {
    if (item.empty()) continue;
    std::vector<int> v;
    std::stringstream one(item);
    std::string field;
    while (std::getline(one, field, ',')) v.push_back(std::stoi(field));
    DLC_REQUIRE(v.size() == 3 || v.size() == 5, "bad shape '" << item << "'");
    Shape s{v[0], v[1], v[2]};
    if (v.size() == 5) {
      s.ta = v[3] != 0;
      s.tb = v[4] != 0;
    }
    shapes.push_back(s);
  }
  return shapes;
}

// `count` random values in [-1, 1), stored as `type`.
cl_mem RandomBuffer(dlcaffe::Context& ctx, size_t count, std::vector<dlcaffe::BufferPtr>* keep,
                    dlcaffe::StorageType type = dlcaffe::StorageType::kFloat32) {
  std::vector<float> values(count);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (float& x : values) x = dist(rng);
  const size_t bytes = count * dlcaffe::StorageBytes(type);
  keep->push_back(ctx.Allocate(bytes));
  if (type == dlcaffe::StorageType::kFloat32) {
    ctx.Write(keep->back()->mem(), 0, bytes, values.data());
  } else {
    std::vector<uint16_t> bits(count);
    for (size_t i = 0; i < count; ++i)
      bits[i] = type == dlcaffe::StorageType::kFloat16 ? dlcaffe::FloatToHalf(values[i])
                                                        : dlcaffe::FloatToBFloat16(values[i]);
    ctx.Write(keep->back()->mem(), 0, bytes, bits.data());
  }
  return keep->back()->mem();
}

dlcaffe::MatrixMath ParseMath(const std::string& name) {
  if (name == "float32") return dlcaffe::MatrixMath::kFloat32;
  if (name == "tf32") return dlcaffe::MatrixMath::kTF32;
  if (name == "float16") return dlcaffe::MatrixMath::kFloat16;
  if (name == "bfloat16") return dlcaffe::MatrixMath::kBFloat16;
  DLC_FAIL("--math=" << name << ": expected float32, tf32, float16 or bfloat16");
}

dlcaffe::StorageType ParseStorage(const std::string& name) {
  if (name == "float32") return dlcaffe::StorageType::kFloat32;
  if (name == "float16") return dlcaffe::StorageType::kFloat16;
  if (name == "bfloat16") return dlcaffe::StorageType::kBFloat16;
  DLC_FAIL("--storage=" << name << ": expected float32, float16 or bfloat16");
}

// CPU time of the whole process (all threads, the OpenCL runtime's included):
// on a shared machine it counts only the time this program actually ran.
double ProcessCpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

// The device's FMA throughput in GFLOP/s, measured: explicit vectors of the
// device's native width on a CPU-shaped device (one work-item per core does
// the work), float4s in many work-items on a GPU. The fastest of 3 runs,
// each long enough (about 0.2 s) to dwarf the launch.
double MeasureFmaPeak(dlcaffe::Context& ctx) {
  const bool cpu = ctx.cpu_shaped_kernels();
  const int native = ctx.info().native_vector_width_float;
  const int vw = cpu ? std::max(1, std::min(16, native)) : 4;
  const int acc = cpu ? 12 : 8;
  const size_t units = std::max(1, ctx.info().compute_units);
  const size_t items = cpu ? units : units * 2048, local = cpu ? 1 : 256;
  std::vector<dlcaffe::BufferPtr> keep;
  keep.push_back(ctx.Allocate(items * sizeof(float)));
  cl_kernel kernel = ctx.Kernel(
      "fma_peak.cl", "-DVW=" + std::to_string(vw) + " -DACC=" + std::to_string(acc), "fma_peak");
  const auto run = [&](int rounds) {
    const auto start = std::chrono::steady_clock::now();
    ctx.Launch(kernel, dlcaffe::NDRange(items), dlcaffe::NDRange(local), rounds, 0.999f,
               keep.back()->mem());
    ctx.Finish();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  int rounds = 1024;
  run(rounds);  // builds the kernel
  while (run(rounds) < 0.05 && rounds < (1 << 28)) rounds *= 2;
  rounds = static_cast<int>(std::min<double>(1 << 30, rounds * 0.2 / std::max(1e-6, run(rounds))));
  double best = 1e30;
  for (int i = 0; i < 3; ++i) best = std::min(best, run(rounds));
  const double gflops = 2.0 * vw * acc * double(rounds) * items / best * 1e-9;
  std::printf("FMA peak: %.1f GFLOP/s (%zu work-items of %d accumulators of float%d)\n", gflops,
              items, acc, vw);
  return gflops;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  try {
    auto ctx = dlcaffe::Context::Create(FLAGS_device);
    std::printf("device: %s\n", ctx->info().Describe().c_str());
    const double peak = FLAGS_peak ? MeasureFmaPeak(*ctx) : 0.0;
    for (const Shape& s : ParseShapes(FLAGS_shapes)) {
      dlcaffe::GemmArgs g;
      g.trans_a = s.ta ? dlcaffe::Transpose::kYes : dlcaffe::Transpose::kNo;
      g.trans_b = s.tb ? dlcaffe::Transpose::kYes : dlcaffe::Transpose::kNo;
      g.M = s.M;
      g.N = s.N;
      g.K = s.K;
      std::vector<dlcaffe::BufferPtr> keep;
      const dlcaffe::StorageType storage = ParseStorage(FLAGS_storage);
      g.a_type = g.b_type = g.c_type = storage;
      g.math = ParseMath(FLAGS_math);
      g.A = RandomBuffer(*ctx, size_t(s.M) * s.K, &keep, storage);
      g.B = RandomBuffer(*ctx, size_t(s.K) * s.N, &keep, storage);
      g.C = RandomBuffer(*ctx, size_t(s.M) * s.N, &keep, storage);
      dlcaffe::GemmConfig config = dlcaffe::ChooseGemmConfig(*ctx, g);
      if (FLAGS_config == "cpu") config = dlcaffe::CpuShapedGemmConfig();
      else if (FLAGS_config == "gpu") config = dlcaffe::GpuShapedGemmConfig();
      else if (FLAGS_config == "dot") config = dlcaffe::DotFormGemmConfig();
      else if (FLAGS_config == "wgmma") config = dlcaffe::WgmmaConfig(128, 128, 16, 6, 0);
      else DLC_REQUIRE(FLAGS_config == "auto", "--config must be auto, cpu, dot, gpu or wgmma");
      if (FLAGS_mr > 0) config.mr = FLAGS_mr;
      if (FLAGS_nr > 0) config.nr = FLAGS_nr;
      if (FLAGS_wg_m > 0) config.wg_m = FLAGS_wg_m;
      if (FLAGS_wg_n > 0) config.wg_n = FLAGS_wg_n;
      if (FLAGS_tk > 0) config.tk = FLAGS_tk;
      if (FLAGS_k_slices >= 0) config.k_slices = FLAGS_k_slices;
      if (FLAGS_pack_a >= 0) config.pack_a = FLAGS_pack_a != 0;
      if (FLAGS_pack_b >= 0) config.pack_b = FLAGS_pack_b != 0;
      if (FLAGS_vector_loads >= 0) config.vector_loads = FLAGS_vector_loads != 0;
      if (FLAGS_groups_per_unit > 0) config.groups_per_unit = FLAGS_groups_per_unit;
      if (FLAGS_stages >= 0) config.stages = FLAGS_stages;
      if (FLAGS_in_flight >= 0) config.in_flight = FLAGS_in_flight;

      dlcaffe::GemmWithConfig(*ctx, g, config);  // builds the kernels
      // The form the product ran in (none where the tile or device has none).
      dlcaffe::MmaForm mma =
          config.use_local ? dlcaffe::MmaFormFor(*ctx, ctx->default_choices(), g.math) : dlcaffe::MmaForm::kNone;
      if (!dlcaffe::MmaWarpsM(config, mma) && !dlcaffe::WgmmaRuns(*ctx, config, g))
        mma = dlcaffe::MmaForm::kNone;
      const int stages = dlcaffe::MmaPipelineStages(*ctx, config, g);
      ctx->Finish();
      double seconds = 1e30, cpu_seconds = 1e30;
      for (int round = 0; round < FLAGS_repeats; ++round) {
        const double cpu_start = ProcessCpuSeconds();
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < FLAGS_iterations; ++i) dlcaffe::GemmWithConfig(*ctx, g, config);
        ctx->Finish();
        seconds = std::min(
            seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                             .count() / FLAGS_iterations);
        cpu_seconds =
            std::min(cpu_seconds, (ProcessCpuSeconds() - cpu_start) / FLAGS_iterations);
      }
      const double gflops = 2.0 * s.M * s.N * s.K / seconds * 1e-9;
      const std::string share =
          peak > 0 ? "  " + std::to_string(static_cast<int>(100 * gflops / peak + 0.5)) + "% of peak"
                   : "";
      std::printf("M=%-5d N=%-6d K=%-6d %s%s  %9.3f ms  %7.1f GFLOP/s  %7.1f GFLOP/cpu-s%s  [%s]\n",
                  s.M, s.N, s.K, s.ta ? "T" : "N", s.tb ? "T" : "N", seconds * 1e3, gflops,
                  2.0 * s.M * s.N * s.K / cpu_seconds * 1e-9, share.c_str(),
                  (config.Name() + (mma == dlcaffe::MmaForm::kNone
                                        ? std::string()
                                        : std::string(" mma ") + dlcaffe::MmaFormName(mma) +
                                              (stages ? " cp.async x" + std::to_string(stages)
                                                      : std::string())))
                      .c_str());
    }
  } catch (const dlcaffe::Error& e) {
    std::fprintf(stderr, "gemm_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
