#include "dlcaffe/program_cache.hpp"
#include "dlcaffe/storage_type.hpp"

#include "core/cache_files.hpp"

#include <glog/logging.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"

namespace dlcaffe {

namespace {

// Sources generated at run time, by name.
struct RegisteredSources {
  std::mutex mutex;
  std::map<std::string, std::string> texts;
};
RegisteredSources& Registered() {
  static RegisteredSources* sources = [] {
    auto* made = new RegisteredSources;  // outlives static destructors
    // The storage types' macros come from their table (storage_type.hpp).
    made->texts.emplace("storage_types.cl", StorageKernelMacros());
    return made;
  }();
  return *sources;
}

// Source files may be read from disk instead of the embedded copies
// (RunOptions::kernel_source_dir, DLCAFFE_CL_DIR=path/to/src/cl), for kernel
// development without rebuilds.
std::string RawSource(const std::string& source, const std::string& source_dir) {
  {
    RegisteredSources& registered = Registered();
    std::lock_guard<std::mutex> lock(registered.mutex);
    auto it = registered.texts.find(source);
    if (it != registered.texts.end()) return it->second;
  }
  if (!source_dir.empty()) {
    std::ifstream in(source_dir + "/" + source);
    if (in) {
      std::stringstream s;
      s << in.rdbuf();
      return s.str();
    }
  }
  const auto& sources = EmbeddedKernelSources();
  auto it = sources.find(source);
  DLC_REQUIRE(it != sources.end(), "no OpenCL source file '" << source
                                       << "' among the embedded kernels");
  return it->second;
}

std::string BuildLog(cl_program program, cl_device_id device) {
  size_t size = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, &log[0], nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

}  // namespace

void RegisterKernelSource(const std::string& name, const std::string& text) {
  RegisteredSources& registered = Registered();
  std::lock_guard<std::mutex> lock(registered.mutex);
  auto inserted = registered.texts.emplace(name, text);
  CHECK(inserted.first->second == text) << "two kernel sources named " << name;
}

namespace {

// `text` with each line `#include "name.cl"` replaced by that source's own
// text (its includes too; a file already in `included` by nothing). The
// OpenCL compiler gets one text and finds no files: a form's kernel source
// shares its family's definitions this way (gemm_tiled.cl includes gemm.cl).
std::string WithIncludes(const std::string& text, const std::string& source_dir,
                         std::set<std::string>* included) {
  static const std::string kDirective = "#include \"";
  if (text.find(kDirective) == std::string::npos) return text;
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const size_t close = line.rfind('"');
    if (line.compare(0, kDirective.size(), kDirective) == 0 && close > kDirective.size()) {
      const std::string name = line.substr(kDirective.size(), close - kDirective.size());
      if (included->insert(name).second)
        out += WithIncludes(RawSource(name, source_dir), source_dir, included) + "\n";
    } else {
      out += line + "\n";
    }
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string ProgramCache::SourceText(const std::string& source, const std::string& source_dir) {
  std::set<std::string> included = {"common.cl"};
  const std::string header =
      WithIncludes(RawSource("common.cl", source_dir), source_dir, &included);
  if (source == "common.cl") return header;
  included.insert(source);
  return header + "\n" + WithIncludes(RawSource(source, source_dir), source_dir, &included);
}

ProgramCache::ProgramCache(cl_context context, cl_device_id device,
                           const DeviceInfo& info)
    : context_(context), device_(device) {
  device_key_ = DeviceCacheKey(info);
}

void ProgramCache::set_directories(const std::string& disk_dir, const std::string& source_dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  disk_dir_ = disk_dir;
  source_dir_ = source_dir;
}

ProgramCache::~ProgramCache() {
  for (auto& k : kernels_) clReleaseKernel(k.second);
  for (auto& p : programs_) clReleaseProgram(p.second);
}

cl_kernel ProgramCache::Kernel(const std::string& source, const std::string& options,
                               const std::string& name) {
  // Every launch asks: a kernel made before is one lookup under one lock,
  // without copying the strings.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = kernels_.find(std::tie(source, options, name));
    if (it != kernels_.end()) return it->second;
  }
  cl_program program = Program(source, options);
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_tuple(source, options, name);
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second;  // made meanwhile by another thread
  cl_int err = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program, name.c_str(), &err);
  DLC_REQUIRE(err == CL_SUCCESS, "no kernel '" << name << "' in " << source
                                               << " (" << ClErrorName(err) << ")");
  kernels_[key] = kernel;
  labels_[kernel] = name + (options.empty() ? "" : " [" + options + "]");
  return kernel;
}

std::string ProgramCache::Label(cl_kernel kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = labels_.find(kernel);
  return it == labels_.end() ? "?" : it->second;
}

cl_program ProgramCache::Program(const std::string& source, const std::string& options) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_pair(source, options);
  auto it = programs_.find(key);
  if (it != programs_.end()) return it->second;

  // A .ptx source is NVIDIA's program binary as it is (core/gemm_wgmma.hpp):
  // loaded, not compiled, and kept out of the disk cache, whose entries are
  // the driver's binaries of OpenCL C (the driver caches its own PTX builds).
  if (IsPtxSource(source)) {
    cl_program program = BuildFromPtx(RawSource(source, source_dir_), options, source);
    programs_[key] = program;
    return program;
  }
  const std::string text = SourceText(source, source_dir_);
  cl_program program = nullptr;
  std::string disk_path;
  if (!disk_dir_.empty()) {
    char name[40];
    std::snprintf(name, sizeof(name), "%016llx.bin",
                  static_cast<unsigned long long>(
                      Fnv1a(device_key_, Fnv1a(options + '\n', Fnv1a(text)))));
    disk_path = disk_dir_ + "/" + name;
    program = LoadBinary(disk_path, options);
  }
  if (!program) {
    program = BuildFromSource(text, options, source);
    if (!disk_path.empty()) StoreBinary(program, disk_path);
  }
  programs_[key] = program;
  return program;
}

cl_program ProgramCache::BuildFromSource(const std::string& text,
                                         const std::string& options,
                                         const std::string& source) {
  const char* src = text.c_str();
  size_t length = text.size();
  cl_int err = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context_, 1, &src, &length, &err);
  DLC_REQUIRE(err == CL_SUCCESS, "cannot create program " << source << ": "
                                                          << ClErrorName(err));
  err = clBuildProgram(program, 1, &device_, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string log = BuildLog(program, device_);
    clReleaseProgram(program);
    DLC_FAIL("OpenCL kernel " << source << " failed to build with options '"
                              << options << "' (" << ClErrorName(err)
                              << "). Build log:\n" << log);
  }
  ++programs_built_;
  return program;
}

bool ProgramCache::IsPtxSource(const std::string& source) {
  return source.size() > 4 && source.compare(source.size() - 4, 4, ".ptx") == 0;
}

namespace {

// A program from a device binary (the disk cache's entries; NVIDIA's PTX),
// built with `options`; null with the reason in *why where the driver
// refuses it.
cl_program ProgramFromBinary(cl_context context, cl_device_id device, const std::string& bytes,
                             const std::string& options, std::string* why) {
  const unsigned char* data = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t length = bytes.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  cl_program program =
      clCreateProgramWithBinary(context, 1, &device, &length, &data, &status, &err);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    if (program) clReleaseProgram(program);
    *why = std::string("refused as a binary (") +
           ClErrorName(err != CL_SUCCESS ? err : status) + ")";
    return nullptr;
  }
  err = clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    *why = std::string("failed to build (") + ClErrorName(err) + "). Build log:\n" +
           BuildLog(program, device);
    clReleaseProgram(program);
    return nullptr;
  }
  return program;
}

}  // namespace

cl_program ProgramCache::BuildFromPtx(const std::string& text, const std::string& options,
                                      const std::string& source) {
  std::string why;
  cl_program program = ProgramFromBinary(context_, device_, text, options, &why);
  DLC_REQUIRE(program, "OpenCL program " << source << " " << why);
  ++programs_built_;
  return program;
}

cl_program ProgramCache::LoadBinary(const std::string& path, const std::string& options) {
  std::string bytes;
  if (!ReadCacheEntry(path, "kernel", &bytes)) return nullptr;
  if (bytes.empty()) return nullptr;
  std::string why;
  cl_program program = ProgramFromBinary(context_, device_, bytes, options, &why);
  if (!program) {
    // Stale or foreign binary: rebuilt from source.
    LOG(WARNING) << "kernel cache: the driver refused " << path << " ("
                 << why.substr(0, why.find('\n')) << "); it is rebuilt";
    return nullptr;
  }
  ++programs_loaded_;
  return program;
}

void ProgramCache::StoreBinary(cl_program program, const std::string& path) {
  size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size,
                       nullptr) != CL_SUCCESS || size == 0)
    return;
  std::string bytes(size, '\0');
  unsigned char* ptr = reinterpret_cast<unsigned char*>(&bytes[0]);
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) !=
      CL_SUCCESS)
    return;
  WriteCacheEntry(path, "kernel", bytes);
}

std::string FirstBuildLogLine(const std::string& error_text) {
  const std::string marker = "Build log:\n";
  const size_t log = error_text.find(marker);
  size_t from = log == std::string::npos ? 0 : log + marker.size();
  while (from < error_text.size() && (error_text[from] == '\n' || error_text[from] == ' '))
    ++from;
  const std::string line = error_text.substr(from, error_text.find('\n', from) - from);
  return line.empty() ? error_text.substr(0, error_text.find('\n')) : line;
}

}  // namespace dlcaffe
