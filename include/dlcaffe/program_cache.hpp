// Kernels are requested by (source file, -D options, kernel name). Each
// program is built once per device and kept; a binary copy goes to an on-disk
// cache keyed by a hash of source, options, device and driver (written by
// atomic rename) so that the next process starts fast.
#pragma once
#include <CL/cl.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace dlcaffe {

struct DeviceInfo;

// Name -> text of every embedded src/cl/*.cl file (generated at build time).
const std::map<std::string, std::string>& EmbeddedKernelSources();

// Makes source text generated at run time (src/core/pointwise_kernel.hpp)
// available to ProgramCache::Kernel under `name`, as if it were an embedded
// file. A name stands for one text: the generator puts a hash of the text in
// it.
void RegisterKernelSource(const std::string& name, const std::string& text);

// The compiler's first line in the text of a build error that Kernel or
// Program threw (its "Build log:" part), else the text's first line: what
// a one-line warning or report shows.
std::string FirstBuildLogLine(const std::string& error_text);

class ProgramCache {
 public:
  // No on-disk cache and the built-in sources until set_directories.
  ProgramCache(cl_context context, cl_device_id device, const DeviceInfo& info);
  ~ProgramCache();
  // Where compiled binaries are kept ("": nowhere) and where sources are
  // read from ("": the built-in copies) for programs built from now on
  // (RunOptions::kernel_cache and kernel_source_dir).
  void set_directories(const std::string& disk_dir, const std::string& source_dir);
  ProgramCache(const ProgramCache&) = delete;
  ProgramCache& operator=(const ProgramCache&) = delete;

  // Build (or fetch) the program for `source` (a file name under src/cl/, or
  // a name given to RegisterKernelSource; a .ptx file is loaded as NVIDIA's
  // program binary, without the shared header)
  // compiled with `options`, and return its kernel `name`. The returned kernel
  // is owned by the cache and shared by every caller asking for the same
  // triple; callers set all arguments right before each enqueue.
  cl_kernel Kernel(const std::string& source, const std::string& options,
                   const std::string& name);
  cl_program Program(const std::string& source, const std::string& options);
  // "name [options]" of a kernel this cache returned ("?" for others).
  std::string Label(cl_kernel kernel);

  // Text of a kernel source file, with the shared header prepended and each
  // line `#include "name.cl"` replaced by that file's text: from
  // `source_dir` where it has the file, else the built-in copy.
  static std::string SourceText(const std::string& source, const std::string& source_dir = "");

  int programs_built() const { return programs_built_; }
  int programs_loaded_from_disk() const { return programs_loaded_; }

 private:
  cl_program BuildFromSource(const std::string& text, const std::string& options,
                             const std::string& source);
  static bool IsPtxSource(const std::string& source);
  cl_program BuildFromPtx(const std::string& text, const std::string& options,
                          const std::string& source);
  cl_program LoadBinary(const std::string& path, const std::string& options);
  void StoreBinary(cl_program program, const std::string& path);

  cl_context context_;
  cl_device_id device_;
  std::string device_key_;  // device name + driver version, part of the disk key
  std::string disk_dir_;    // empty: no on-disk cache
  std::string source_dir_;  // empty: the built-in sources
  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, cl_program> programs_;
  std::map<std::tuple<std::string, std::string, std::string>, cl_kernel, std::less<>> kernels_;
  std::map<cl_kernel, std::string> labels_;
  int programs_built_ = 0;
  int programs_loaded_ = 0;
};

}  // namespace dlcaffe
