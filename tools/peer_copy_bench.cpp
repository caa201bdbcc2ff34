// Peer copy benchmark: how could gradients travel between two OpenCL devices
// for data-parallel training? Measured on whatever platform it runs on:
//
//   peer_copy_bench [--devices=A,B] [--sizes_mb=1,4,25,100] [--repeats=10]
//
// 1. Host-staged (what src/parallel does now): each device in its own context,
//    a device buffer and a pinned host buffer (CL_MEM_ALLOC_HOST_PTR, mapped
//    once). host_d2h = clEnqueueReadBuffer into it, host_h2d = Write from it;
//    *_concurrent = both devices at once (two queues flushed together), as an
//    aggregate: "2.00x one device's" means independent links, 1.00x shared.
// 2. Peer: ONE context with both devices, a queue on each. A is written by a
//    kernel on A's queue (then clFinish: its latest copy is on A); B was last
//    filled on B's queue. peer_copy = clEnqueueCopyBuffer(A -> B) on B's queue;
//    peer_migrate = clEnqueueMigrateMemObjects(A to B's queue), OpenCL >= 1.2.
//    Each run is checked word by word: a wrong result prints FAILED, no speed.
//    The driver may route these through the host or peer-to-peer and does not
//    say which, so each line repeats the host figures: P2P (NVLink) is far
//    above host_d2h; through the host it is at or below about half of
//    min(host_d2h of A, host_h2d of B). A figure far above memory bandwidth
//    means nothing moved (same device, or a lazy migration). --devices=0,0:
//    a same-device copy in a shared context, a baseline (e.g. on PoCL).
//
// GB/s = 1e9 bytes/s of wall time around enqueue + clFinish, best and median
// of --repeats runs after one untimed warm-up; sizes are MiB. One line per
// (path, size): grep "^peer_copy", "^host_d2h", "FAILED" (then exit code 1).
#include <gflags/gflags.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"

DEFINE_string(devices, "0,1", "two flat device indices over all platforms (may be the same)");
DEFINE_string(sizes_mb, "1,4,25,100", "comma-separated buffer sizes in MiB");
DEFINE_int32(repeats, 10, "timed runs per (path, size); the best and the median are printed");
DEFINE_int32(pieces, 40, "part 3: a bucket's writes/reads as this many separate copies");

namespace {

using dlcaffe::DeviceInfo;

// For the calls that return an object and report through errcode_ret (`&err`,
// read only after the call ran): the object, or dlcaffe::Error naming the call.
template <class T>
T Created(T made, const cl_int* err, const char* call) {
  if (*err != CL_SUCCESS) dlcaffe::ThrowClError(call, *err);
  return made;
}
#define CL_CREATE(call) Created((call), &err, #call)

std::string PlatformString(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  DLC_CL_CHECK(clGetPlatformInfo(p, what, 0, nullptr, &size));
  std::string s(size, '\0');
  DLC_CL_CHECK(clGetPlatformInfo(p, what, size, &s[0], nullptr));
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

struct Stats {
  std::string failure;          // empty when every run was right
  double best = 0, median = 0;  // GB/s
};

// Runs prepare (untimed), timed (must end in clFinish) and check (untimed;
// returns "" or what was wrong) once to warm up, then --repeats times.
Stats Measure(size_t bytes, const std::function<void()>& timed,
              const std::function<void(int)>& prepare = {},
              const std::function<std::string(int)>& check = {}) {
  Stats stats;
  std::vector<double> seconds;
  for (int run = 0; run <= FLAGS_repeats; ++run) {
    if (prepare) prepare(run);
    const auto start = std::chrono::steady_clock::now();
    timed();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    stats.failure = check ? check(run) : "";
    if (!stats.failure.empty()) {
      stats.failure = "run " + std::to_string(run) + ": " + stats.failure;
      return stats;
    }
  }
  seconds.erase(seconds.begin());  // the warm-up
  std::sort(seconds.begin(), seconds.end());
  const size_t n = seconds.size();
  stats.best = bytes / seconds[0] * 1e-9;
  stats.median = bytes / (0.5 * (seconds[(n - 1) / 2] + seconds[n / 2])) * 1e-9;
  return stats;
}

bool any_failed = false;  // makes the exit code 1 after all lines are printed

void Print(const char* path, const std::string& devs, int mb, const Stats& s,
           const std::string& note = "") {
  any_failed |= !s.failure.empty();
  if (!s.failure.empty())
    std::printf("%-20s devs=%-4s size_mb=%-4d FAILED (%s)\n", path, devs.c_str(), mb,
                s.failure.c_str());
  else
    std::printf("%-20s devs=%-4s size_mb=%-4d best_GBps=%8.2f median_GBps=%8.2f%s\n", path,
                devs.c_str(), mb, s.best, s.median, note.c_str());
  std::fflush(stdout);
}

// Part 1: one device in its own context, a pinned host buffer mapped once
// (all released at exit).
struct Staged {
  cl_context ctx = nullptr;
  cl_command_queue queue = nullptr;
  cl_mem device = nullptr;
  void* host = nullptr;
  Staged(const DeviceInfo& d, size_t bytes) {
    cl_int err = CL_SUCCESS;
    ctx = CL_CREATE(clCreateContext(nullptr, 1, &d.device_id, nullptr, nullptr, &err));
    queue = CL_CREATE(clCreateCommandQueue(ctx, d.device_id, 0, &err));
    device = CL_CREATE(clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err));
    cl_mem pinned = CL_CREATE(clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &err));
    host = CL_CREATE(clEnqueueMapBuffer(queue, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                        bytes, 0, nullptr, nullptr, &err));
    std::memset(host, 1, bytes);  // touch every page before timing
    const cl_uint zero = 0;
    DLC_CL_CHECK(clEnqueueFillBuffer(queue, device, &zero, 4, 0, bytes, 0, nullptr, nullptr));
    DLC_CL_CHECK(clFinish(queue));
  }
  void Enqueue(int to_host, size_t bytes) {
    if (to_host)
      DLC_CL_CHECK(
          clEnqueueReadBuffer(queue, device, CL_FALSE, 0, bytes, host, 0, nullptr, nullptr));
    else
      DLC_CL_CHECK(
          clEnqueueWriteBuffer(queue, device, CL_FALSE, 0, bytes, host, 0, nullptr, nullptr));
  }
};

// Part 2: what device A writes into A; word i depends on i, so a shifted or
// partial copy is caught, and on the run's seed, so a stale one is too.
const char* kPatternSource =
    "__kernel void pattern(__global uint* a, uint seed) {\n"
    "  uint i = (uint)get_global_id(0);\n"
    "  a[i] = (i * 2654435761u) ^ seed;\n"
    "}\n";

std::string CheckPattern(const std::vector<cl_uint>& got, cl_uint seed) {
  for (size_t i = 0; i < got.size(); ++i) {
    const cl_uint want = (static_cast<cl_uint>(i) * 2654435761u) ^ seed;
    if (got[i] != want)
      return "word " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
             std::to_string(want);
  }
  return "";
}

std::vector<int> ParseInts(const std::string& text, const char* flag) {
  std::vector<int> v;
  std::string item;
  for (std::istringstream all(text); std::getline(all, item, ',');) {
    char* end = nullptr;
    const long x = std::strtol(item.c_str(), &end, 10);
    DLC_REQUIRE(!item.empty() && *end == '\0' && x >= 0 && x < (1 << 20),
                "--" << flag << ": bad number '" << item << "'");
    v.push_back(static_cast<int>(x));
  }
  return v;
}

// Part 3: the copies as data-parallel training makes them, on the first
// device: a bucket as --pieces separate copies (one per parameter) against
// one copy; a write from pinned memory of another context (the second
// device's, or a second context on the same device); a write while a kernel
// keeps the device busy on another queue (does the copy overlap compute, and
// at what rate?).
void ExchangePatterns(Staged& s, Staged& other, const std::string& id, const std::vector<int>& mbs) {
  cl_int err = CL_SUCCESS;
  const char* spin_source =
      "__kernel void spin(__global float* x, int n) {\n"
      "  float v = x[get_global_id(0)];\n"
      "  for (int i = 0; i < n; ++i) v = v * 0.999f + 0.001f;\n"
      "  x[get_global_id(0)] = v;\n"
      "}\n";
  cl_device_id device = nullptr;
  DLC_CL_CHECK(clGetCommandQueueInfo(s.queue, CL_QUEUE_DEVICE, sizeof device, &device, nullptr));
  cl_program program = CL_CREATE(clCreateProgramWithSource(s.ctx, 1, &spin_source, nullptr, &err));
  DLC_CL_CHECK(clBuildProgram(program, 1, &device, "", nullptr, nullptr));
  cl_kernel spin = CL_CREATE(clCreateKernel(program, "spin", &err));
  cl_command_queue compute = CL_CREATE(clCreateCommandQueue(s.ctx, device, 0, &err));
  const size_t spin_items = size_t(1) << 20;
  cl_mem spin_data = CL_CREATE(clCreateBuffer(s.ctx, CL_MEM_READ_WRITE, spin_items * 4, nullptr, &err));
  const float zero = 0.f;
  DLC_CL_CHECK(clEnqueueFillBuffer(compute, spin_data, &zero, 4, 0, spin_items * 4, 0, nullptr, nullptr));
  DLC_CL_CHECK(clSetKernelArg(spin, 0, sizeof spin_data, &spin_data));
  // The loop count that keeps the device busy for about 50 ms.
  int n = 1000;
  for (;;) {
    DLC_CL_CHECK(clSetKernelArg(spin, 1, sizeof n, &n));
    const auto start = std::chrono::steady_clock::now();
    DLC_CL_CHECK(clEnqueueNDRangeKernel(compute, spin, 1, nullptr, &spin_items, nullptr, 0, nullptr, nullptr));
    DLC_CL_CHECK(clFinish(compute));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (ms > 40 || n > (1 << 28)) {
      std::printf("exchange: busy kernel %.1f ms (loop %d) on #%s\n", ms, n, id.c_str());
      break;
    }
    n *= ms < 5 ? 8 : 2;
  }
  const int pieces = std::max(1, FLAGS_pieces);
  for (int mb : mbs) {
    const size_t bytes = size_t(mb) << 20;
    const size_t piece = (bytes / pieces) / 4 * 4;
    const auto split = [&](int to_host, void* host) {
      for (int k = 0; k < pieces; ++k) {
        const size_t at = k * piece, size = k + 1 == pieces ? bytes - at : piece;
        char* h = static_cast<char*>(host) + at;
        if (to_host)
          DLC_CL_CHECK(clEnqueueReadBuffer(s.queue, s.device, CL_FALSE, at, size, h, 0, nullptr, nullptr));
        else
          DLC_CL_CHECK(clEnqueueWriteBuffer(s.queue, s.device, CL_FALSE, at, size, h, 0, nullptr, nullptr));
      }
      DLC_CL_CHECK(clFinish(s.queue));
    };
    char name[64];
    std::snprintf(name, sizeof name, "exchange_d2h_%dpieces", pieces);
    Print(name, id, mb, Measure(bytes, [&] { split(1, s.host); }));
    std::snprintf(name, sizeof name, "exchange_h2d_%dpieces", pieces);
    Print(name, id, mb, Measure(bytes, [&] { split(0, s.host); }));
    Print("exchange_h2d_foreign", id, mb, Measure(bytes, [&] {
      DLC_CL_CHECK(clEnqueueWriteBuffer(s.queue, s.device, CL_FALSE, 0, bytes, other.host, 0, nullptr, nullptr));
      DLC_CL_CHECK(clFinish(s.queue));
    }), "  (host memory pinned by another context)");
    for (int to_host : {0, 1}) {
      Print(to_host ? "exchange_d2h_busy" : "exchange_h2d_busy", id, mb, Measure(bytes, [&] {
        DLC_CL_CHECK(clEnqueueNDRangeKernel(compute, spin, 1, nullptr, &spin_items, nullptr, 0, nullptr, nullptr));
        DLC_CL_CHECK(clFlush(compute));
        s.Enqueue(to_host, bytes);
        DLC_CL_CHECK(clFinish(s.queue));
      }, {}, [&](int) { DLC_CL_CHECK(clFinish(compute)); return std::string(); }),
        "  (while a kernel runs on another queue)");
    }
  }
}

int Run() {
  const std::vector<int> wanted = ParseInts(FLAGS_devices, "devices");
  DLC_REQUIRE(wanted.size() == 2, "--devices needs two flat indices, e.g. 0,1");
  DLC_REQUIRE(FLAGS_repeats >= 1, "--repeats must be at least 1");
  const std::vector<DeviceInfo> all = dlcaffe::ListDevices();
  DLC_REQUIRE(!all.empty(), "no OpenCL device found");
  std::vector<DeviceInfo> devs;
  for (int i : wanted)
    if (i < static_cast<int>(all.size())) devs.push_back(all[i]);
  DLC_REQUIRE(!devs.empty(), "none of --devices=" << FLAGS_devices << " exists");

  // Header. The extensions that could offer another path than a copy.
  const std::string relevant =
      "cl_khr_external_memory cl_khr_external_semaphore cl_khr_semaphore "
      "cl_khr_command_buffer_multi_device cl_ext_buffer_device_address "
      "cl_intel_unified_shared_memory";
  for (size_t k = 0; k < devs.size(); ++k) {
    const DeviceInfo& d = devs[k];
    const std::string platform_ext =
        " " + PlatformString(d.platform_id, CL_PLATFORM_EXTENSIONS) + " ";
    std::string listed, e;
    for (std::istringstream names(relevant); names >> e;)
      if (d.has_extension(e) || platform_ext.find(" " + e + " ") != std::string::npos)
        listed += " " + e;
    std::printf("device %zu: #%d %s | platform %s | %s | device %s | driver %s\n", k, d.flat_index,
                d.name.c_str(), d.platform_name.c_str(),
                PlatformString(d.platform_id, CL_PLATFORM_VERSION).c_str(), d.version.c_str(),
                d.driver_version.c_str());
    std::printf("device %zu: extension string %zu chars; relevant cl_khr/ext listed:%s\n", k,
                d.extensions.size(), listed.empty() ? " none" : listed.c_str());
  }
  std::printf("(relevant = %s)\n", relevant.c_str());

  const std::vector<int> mbs = ParseInts(FLAGS_sizes_mb, "sizes_mb");
  DLC_REQUIRE(!mbs.empty() && *std::min_element(mbs.begin(), mbs.end()) > 0,
              "--sizes_mb needs positive sizes");
  const size_t max_bytes = size_t(*std::max_element(mbs.begin(), mbs.end())) << 20;
  for (const DeviceInfo& d : devs)
    DLC_REQUIRE(max_bytes <= d.max_alloc_bytes,
                "#" << d.flat_index << " cannot allocate " << max_bytes << " bytes in one buffer");

  const bool pair = devs.size() == 2 && devs[0].platform_id == devs[1].platform_id;
  const bool same = pair && devs[0].device_id == devs[1].device_id;
  const std::string id0 = std::to_string(devs[0].flat_index);
  const std::string id1 = devs.size() > 1 ? std::to_string(devs[1].flat_index) : "";
  if (devs.size() < 2)
    std::printf(
        "--devices=%s but %zu OpenCL device(s) here: no peer path; host-staged of #%s only\n",
        FLAGS_devices.c_str(), all.size(), id0.c_str());
  else if (!pair)
    std::printf("#%s and #%s are on different platforms: no shared context; host-staged only\n",
                id0.c_str(), id1.c_str());

  // Part 1. host[k][size index][to_host] is kept to print beside the peer lines.
  // A device named twice is measured alone once; the concurrent run still
  // uses two contexts on it.
  const char* kPath[2][2] = {{"host_h2d", "host_d2h"},
                             {"host_h2d_concurrent", "host_d2h_concurrent"}};
  std::vector<std::vector<std::array<Stats, 2>>> host(devs.size());
  std::vector<std::unique_ptr<Staged>> staged;
  for (const DeviceInfo& d : devs) staged.push_back(std::make_unique<Staged>(d, max_bytes));
  for (int mb : mbs) {
    const size_t bytes = size_t(mb) << 20;
    for (auto& h : host) h.emplace_back();
    for (int to_host : {1, 0}) {
      for (size_t k = 0; k < (same ? 1 : devs.size()); ++k) {
        Staged& s = *staged[k];
        host[k].back()[to_host] = Measure(bytes, [&] {
          s.Enqueue(to_host, bytes);
          DLC_CL_CHECK(clFinish(s.queue));
        });
        Print(kPath[0][to_host], k ? id1 : id0, mb, host[k].back()[to_host]);
      }
      if (devs.size() < 2) continue;
      if (same) host[1].back()[to_host] = host[0].back()[to_host];
      // Both enqueued and flushed before either is waited on, so they overlap.
      const Stats both = Measure(2 * bytes, [&] {
        for (auto& s : staged) {
          s->Enqueue(to_host, bytes);
          DLC_CL_CHECK(clFlush(s->queue));
        }
        for (auto& s : staged) DLC_CL_CHECK(clFinish(s->queue));
      });
      char note[80];
      std::snprintf(note, sizeof note, "  (aggregate: %.2fx one device's best)",
                    2 * both.best / (host[0].back()[to_host].best + host[1].back()[to_host].best));
      Print(kPath[1][to_host], id0 + "+" + id1, mb, both, note);
    }
  }
  ExchangePatterns(*staged[0], *staged.back(), id0, mbs);
  if (!pair) return 0;

  // Part 2: one context with both devices (a device named twice counts once).
  const cl_device_id ids[2] = {devs[0].device_id, devs[1].device_id};
  cl_int err = CL_SUCCESS;
  cl_context ctx = CL_CREATE(clCreateContext(nullptr, same ? 1 : 2, ids, nullptr, nullptr, &err));
  cl_command_queue q0 = CL_CREATE(clCreateCommandQueue(ctx, ids[0], 0, &err));
  cl_command_queue q1 = CL_CREATE(clCreateCommandQueue(ctx, ids[1], 0, &err));
  cl_program program = CL_CREATE(clCreateProgramWithSource(ctx, 1, &kPatternSource, nullptr, &err));
  DLC_CL_CHECK(clBuildProgram(program, 0, nullptr, "", nullptr, nullptr));
  cl_kernel kernel = CL_CREATE(clCreateKernel(program, "pattern", &err));
  cl_mem a = CL_CREATE(clCreateBuffer(ctx, CL_MEM_READ_WRITE, max_bytes, nullptr, &err));
  cl_mem b = CL_CREATE(clCreateBuffer(ctx, CL_MEM_READ_WRITE, max_bytes, nullptr, &err));
  int major = 0, minor = 0;  // "OpenCL 1.2 <platform specific>"
  std::sscanf(PlatformString(devs[0].platform_id, CL_PLATFORM_VERSION).c_str(), "OpenCL %d.%d",
              &major, &minor);
  const bool can_migrate = major * 100 + minor >= 102;
  const std::string both = id0 + ">" + id1;
  std::vector<cl_uint> back;

  for (size_t si = 0; si < mbs.size(); ++si) {
    const size_t bytes = size_t(mbs[si]) << 20, words = bytes / sizeof(cl_uint);
    back.resize(words);
    const auto seed = [&](int run) { return cl_uint(0x9e3779b9u * (si * 1000 + run + 1)); };
    const auto write_a = [&](int run) {  // A's latest content on device A, as a gradient's
      const cl_uint s = seed(run);
      DLC_CL_CHECK(clSetKernelArg(kernel, 0, sizeof a, &a));
      DLC_CL_CHECK(clSetKernelArg(kernel, 1, sizeof s, &s));
      DLC_CL_CHECK(
          clEnqueueNDRangeKernel(q0, kernel, 1, nullptr, &words, nullptr, 0, nullptr, nullptr));
      DLC_CL_CHECK(clFinish(q0));
    };
    const auto read_check = [&](cl_mem m, int run) {
      DLC_CL_CHECK(clEnqueueReadBuffer(q1, m, CL_TRUE, 0, bytes, back.data(), 0, nullptr, nullptr));
      return CheckPattern(back, seed(run));
    };
    char note[120];
    std::snprintf(note, sizeof note, "  | best host_d2h(#%s)=%.2f host_h2d(#%s)=%.2f%s",
                  id0.c_str(), host[0][si][1].best, id1.c_str(), host[1][si][0].best,
                  same ? "  (same device)" : "");
    const auto copy_prepare = [&](int run) {
      write_a(run);
      const cl_uint junk = 0xdeadbeefu;  // B last touched on device B
      DLC_CL_CHECK(clEnqueueFillBuffer(q1, b, &junk, 4, 0, bytes, 0, nullptr, nullptr));
      DLC_CL_CHECK(clFinish(q1));
    };
    const auto copy = [&] {
      DLC_CL_CHECK(clEnqueueCopyBuffer(q1, a, b, 0, 0, bytes, 0, nullptr, nullptr));
      DLC_CL_CHECK(clFinish(q1));
    };
    Print("peer_copy", both, mbs[si],
          Measure(bytes, copy, copy_prepare, [&](int run) { return read_check(b, run); }), note);
    if (!can_migrate) {
      std::printf("%-20s devs=%-4s size_mb=%-4d skipped (platform below OpenCL 1.2)\n",
                  "peer_migrate", both.c_str(), mbs[si]);
      continue;
    }
    const auto migrate = [&] {
      DLC_CL_CHECK(clEnqueueMigrateMemObjects(q1, 1, &a, 0, 0, nullptr, nullptr));
      DLC_CL_CHECK(clFinish(q1));
    };
    Print("peer_migrate", both, mbs[si],
          Measure(bytes, migrate, write_a, [&](int run) { return read_check(a, run); }), note);
  }
  return any_failed ? 1 : 0;  // OpenCL objects are released at exit
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("peer_copy_bench [--devices=A,B] [--sizes_mb=1,4,25,100] [--repeats=N]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  try {
    return Run();
  } catch (const dlcaffe::Error& e) {
    std::fprintf(stderr, "peer_copy_bench: %s\n", e.what());
    return 1;
  }
}
