#include "dlcaffe/context.hpp"
#include "dlcaffe/layer_choices.hpp"

#include <glog/logging.h>

#include <cstdlib>
#include <limits>
#include <sstream>

#include "core/cache_files.hpp"
#include "core/device_choice.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

[[noreturn]] void ThrowClError(const char* what, cl_int err) {
  std::ostringstream s;
  s << "OpenCL call failed with " << ClErrorName(err) << " (" << err
    << "): " << what;
  throw Error(s.str());
}

static std::string PlatformString(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS) return "";
  std::string s(size, '\0');
  clGetPlatformInfo(p, what, size, &s[0], nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

static std::string DeviceString(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS) return "";
  std::string s(size, '\0');
  clGetDeviceInfo(d, what, size, &s[0], nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
static T DeviceValue(cl_device_id d, cl_device_info what) {
  T value{};
  clGetDeviceInfo(d, what, sizeof(T), &value, nullptr);
  return value;
}

std::string DeviceInfo::Describe() const {
  std::ostringstream s;
  s << "ocl:" << platform_index << ":" << device_index << " (#" << flat_index
    << ") " << name << " [" << platform_name << ", driver " << driver_version
    << (is_gpu() ? ", GPU" : is_cpu() ? ", CPU" : "") << "]";
  return s.str();
}

bool DeviceInfo::has_extension(const std::string& extension) const {
  std::istringstream words(extensions);
  std::string word;
  while (words >> word)
    if (word == extension) return true;
  return false;
}

std::vector<DeviceInfo> ListDevices() {
  std::vector<DeviceInfo> devices;
  cl_uint num_platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &num_platforms) != CL_SUCCESS) return devices;
  std::vector<cl_platform_id> platforms(num_platforms);
  clGetPlatformIDs(num_platforms, platforms.data(), nullptr);
  for (cl_uint p = 0; p < num_platforms; ++p) {
    cl_uint num_devices = 0;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr,
                       &num_devices) != CL_SUCCESS)
      continue;
    std::vector<cl_device_id> ids(num_devices);
    clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, num_devices, ids.data(),
                   nullptr);
    for (cl_uint d = 0; d < num_devices; ++d) {
      DeviceInfo info;
      info.platform_index = static_cast<int>(p);
      info.device_index = static_cast<int>(d);
      info.flat_index = static_cast<int>(devices.size());
      info.platform_id = platforms[p];
      info.device_id = ids[d];
      info.platform_name = PlatformString(platforms[p], CL_PLATFORM_NAME);
      info.name = DeviceString(ids[d], CL_DEVICE_NAME);
      info.vendor = DeviceString(ids[d], CL_DEVICE_VENDOR);
      info.version = DeviceString(ids[d], CL_DEVICE_VERSION);
      info.driver_version = DeviceString(ids[d], CL_DRIVER_VERSION);
      info.type = DeviceValue<cl_device_type>(ids[d], CL_DEVICE_TYPE);
      info.global_mem_bytes = DeviceValue<cl_ulong>(ids[d], CL_DEVICE_GLOBAL_MEM_SIZE);
      info.local_mem_bytes = DeviceValue<cl_ulong>(ids[d], CL_DEVICE_LOCAL_MEM_SIZE);
      info.max_alloc_bytes = DeviceValue<cl_ulong>(ids[d], CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      info.compute_units = static_cast<int>(DeviceValue<cl_uint>(ids[d], CL_DEVICE_MAX_COMPUTE_UNITS));
      info.max_work_group_size = DeviceValue<size_t>(ids[d], CL_DEVICE_MAX_WORK_GROUP_SIZE);
      info.prefers_cpu_shaped_kernels =
          info.is_cpu() ||
          DeviceValue<cl_device_local_mem_type>(ids[d], CL_DEVICE_LOCAL_MEM_TYPE) != CL_LOCAL;
      info.native_vector_width_float =
          static_cast<int>(DeviceValue<cl_uint>(ids[d], CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT));
      info.extensions = DeviceString(ids[d], CL_DEVICE_EXTENSIONS);
      devices.push_back(info);
    }
  }
  return devices;
}

static std::string DeviceList(const std::vector<DeviceInfo>& devices) {
  std::ostringstream s;
  for (const auto& d : devices) s << "\n  " << d.Describe();
  return s.str();
}

std::unique_ptr<Context> Context::Create(const std::string& spec) {
  RunOptions options = RunOptions::FromEnvironment();
  if (!spec.empty()) options.device = spec;
  return Create(options);
}

DeviceInfo ChooseDevice(const RunOptions& options, std::string* why) {
  const std::string& spec = options.device;
  const std::vector<DeviceInfo> devices = ListDevices();
  if (devices.empty()) {
    cl_uint num_platforms = 0;
    cl_int err = clGetPlatformIDs(0, nullptr, &num_platforms);
    DLC_FAIL("no OpenCL device found (clGetPlatformIDs: "
             << ClErrorName(err) << ", " << num_platforms
             << " platform(s)). Install an OpenCL driver, e.g. "
                "'apt-get install pocl-opencl-icd' for the CPU.");
  }
  if (spec.empty())
    return DefaultDevice(devices, MeasureDevice, CacheDirectory(options.tuning_cache, "tuning"),
                         why);
  if (spec == "cpu") {
    std::vector<DeviceInfo> cpus;
    for (const auto& d : devices)
      if (d.is_cpu()) cpus.push_back(d);
    if (!cpus.empty())
      return DefaultDevice(cpus, MeasureDevice, CacheDirectory(options.tuning_cache, "tuning"),
                           why);
    DLC_FAIL("no OpenCL CPU device (device 'cpu'; on Debian, install pocl-opencl-icd). Devices:"
             << DeviceList(devices));
  }
  if (why) *why = "named by the device option";
  if (spec.rfind("ocl:", 0) == 0) {
    int p = -1, d = -1;
    char extra = 0;
    if (std::sscanf(spec.c_str() + 4, "%d:%d%c", &p, &d, &extra) == 2) {
      for (const auto& info : devices)
        if (info.platform_index == p && info.device_index == d) return info;
    }
  } else {
    char* end = nullptr;
    long index = std::strtol(spec.c_str(), &end, 10);
    if (end && *end == '\0' && index >= 0 && index < (long)devices.size()) return devices[index];
  }
  DLC_FAIL("no OpenCL device '" << spec
                                << "'; use ocl:P:D, a flat index or cpu. Devices:"
                                << DeviceList(devices));
}

std::unique_ptr<Context> Context::Create(const RunOptions& options) {
  return std::make_unique<Context>(ChooseDevice(options), options);
}

Context::Context(const DeviceInfo& info, const RunOptions& options)
    : info_(info), options_(options) {
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(info.platform_id), 0};
  context_ = clCreateContext(props, 1, &info_.device_id, nullptr, nullptr, &err);
  DLC_REQUIRE(err == CL_SUCCESS, "cannot create an OpenCL context on "
                                     << info_.Describe() << ": " << ClErrorName(err));
  queue_ = clCreateCommandQueue(context_, info_.device_id, 0, &err);
  DLC_REQUIRE(err == CL_SUCCESS, "cannot create a command queue on "
                                     << info_.Describe() << ": " << ClErrorName(err));
  pool_ = std::make_shared<BufferPool>(context_);
  pool_->set_device_limits(info_.max_alloc_bytes, info_.global_mem_bytes);
  programs_ = std::make_unique<ProgramCache>(context_, info_.device_id, info_);
  set_options(options);
}

void Context::set_options(const RunOptions& options) {
  options_ = options;
  tuned_gemms_.reset();
  programs_->set_directories(CacheDirectory(options_.kernel_cache, "kernels"),
                             options_.kernel_source_dir);
  if (options_.profile) EnableKernelProfile();
}

bool Context::cpu_shaped_kernels() const { return CpuShapedKernels(options_, info_); }

LayerChoices Context::default_choices() const { return DecideLayerChoices(options_, info_); }

float Context::fresh_value() const {
  return options_.poison ? std::numeric_limits<float>::quiet_NaN() : 0.f;
}

Context::~Context() {
  if (queue_) clFinish(queue_);
  profile_.reset();
  programs_.reset();
  if (queue_) clReleaseCommandQueue(queue_);
  if (context_) clReleaseContext(context_);
}

void Context::CheckSetArg(cl_int err, cl_kernel kernel, cl_uint index) {
  if (err == CL_SUCCESS) return;
  char name[256] = {0};
  clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof(name) - 1, name, nullptr);
  DLC_FAIL("setting argument " << index << " of kernel " << name << ": "
                               << ClErrorName(err));
}

void Context::EnableKernelProfile() {
  if (profile_) return;
  DLC_CL_CHECK(clFinish(queue_));
  cl_int err = CL_SUCCESS;
  cl_command_queue profiled =
      clCreateCommandQueue(context_, info_.device_id, CL_QUEUE_PROFILING_ENABLE, &err);
  DLC_REQUIRE(err == CL_SUCCESS, "cannot create a profiling command queue on "
                                     << info_.Describe() << ": " << ClErrorName(err));
  clReleaseCommandQueue(queue_);
  queue_ = profiled;
  profile_ = std::make_unique<KernelProfile>();
}

void Context::Enqueue(cl_kernel kernel, const NDRange& global, const NDRange& local) {
  const cl_uint dims = global.dims;
  cl_event event = nullptr;
  cl_int err = clEnqueueNDRangeKernel(queue_, kernel, dims, nullptr,
                                      global.size.data(),
                                      local.dims ? local.size.data() : nullptr,
                                      0, nullptr, profile_ ? &event : nullptr);
  if (err == CL_SUCCESS && event) profile_->Record(event, programs_->Label(kernel));
  if (err != CL_SUCCESS) {
    char name[256] = {0};
    clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof(name) - 1, name, nullptr);
    DLC_FAIL("enqueueing kernel " << name << " (global " << global.size[0] << "x"
                                  << global.size[1] << "x" << global.size[2]
                                  << "): " << ClErrorName(err));
  }
}

void Context::Write(cl_mem dst, size_t offset_bytes, size_t bytes, const void* src) {
  if (bytes == 0) return;
  DLC_CL_CHECK(clEnqueueWriteBuffer(queue_, dst, CL_TRUE, offset_bytes, bytes, src,
                                    0, nullptr, ProfileEvent()));
  RecordProfileEvent("(write to the device)");
}

void Context::Read(cl_mem src, size_t offset_bytes, size_t bytes, void* dst) {
  if (bytes == 0) return;
  DLC_CL_CHECK(clEnqueueReadBuffer(queue_, src, CL_TRUE, offset_bytes, bytes, dst,
                                   0, nullptr, ProfileEvent()));
  RecordProfileEvent("(read from the device)");
}

void Context::Copy(cl_mem src, size_t src_offset_bytes, cl_mem dst,
                   size_t dst_offset_bytes, size_t bytes) {
  if (bytes == 0) return;
  DLC_CL_CHECK(clEnqueueCopyBuffer(queue_, src, dst, src_offset_bytes,
                                   dst_offset_bytes, bytes, 0, nullptr, ProfileEvent()));
  RecordProfileEvent("(copy)");
}

void Context::Fill(cl_mem dst, size_t offset, size_t count, float value) {
  if (count == 0) return;
  DLC_CL_CHECK(clEnqueueFillBuffer(queue_, dst, &value, sizeof(float),
                                   offset * sizeof(float), count * sizeof(float),
                                   0, nullptr, ProfileEvent()));
  RecordProfileEvent("(fill)");
}

void Context::FillPattern(cl_mem dst, size_t offset_bytes, size_t bytes, const void* pattern,
                          size_t pattern_bytes) {
  if (bytes == 0) return;
  DLC_CL_CHECK(clEnqueueFillBuffer(queue_, dst, pattern, pattern_bytes, offset_bytes, bytes, 0,
                                   nullptr, ProfileEvent()));
  RecordProfileEvent("(fill)");
}

cl_event* Context::ProfileEvent() {
  pending_event_ = nullptr;
  return profile_ ? &pending_event_ : nullptr;
}

void Context::RecordProfileEvent(const char* label) {
  if (pending_event_) profile_->Record(pending_event_, label);
  pending_event_ = nullptr;
}

void Context::Finish() { DLC_CL_CHECK(clFinish(queue_)); }

BufferPtr Context::Allocate(size_t bytes) {
  BufferPtr buffer = pool_->Acquire(bytes);
  if (options_.poison) Fill(buffer->mem(), 0, buffer->bytes() / sizeof(float), fresh_value());
  return buffer;
}

const char* ClErrorName(cl_int err) {
  switch (err) {
#define DLC_CASE(e) case e: return #e;
    DLC_CASE(CL_SUCCESS) DLC_CASE(CL_DEVICE_NOT_FOUND) DLC_CASE(CL_DEVICE_NOT_AVAILABLE)
    DLC_CASE(CL_COMPILER_NOT_AVAILABLE) DLC_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    DLC_CASE(CL_OUT_OF_RESOURCES) DLC_CASE(CL_OUT_OF_HOST_MEMORY)
    DLC_CASE(CL_PROFILING_INFO_NOT_AVAILABLE) DLC_CASE(CL_MEM_COPY_OVERLAP)
    DLC_CASE(CL_IMAGE_FORMAT_MISMATCH) DLC_CASE(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    DLC_CASE(CL_BUILD_PROGRAM_FAILURE) DLC_CASE(CL_MAP_FAILURE)
    DLC_CASE(CL_MISALIGNED_SUB_BUFFER_OFFSET) DLC_CASE(CL_COMPILE_PROGRAM_FAILURE)
    DLC_CASE(CL_LINKER_NOT_AVAILABLE) DLC_CASE(CL_LINK_PROGRAM_FAILURE)
    DLC_CASE(CL_INVALID_VALUE) DLC_CASE(CL_INVALID_DEVICE_TYPE) DLC_CASE(CL_INVALID_PLATFORM)
    DLC_CASE(CL_INVALID_DEVICE) DLC_CASE(CL_INVALID_CONTEXT) DLC_CASE(CL_INVALID_QUEUE_PROPERTIES)
    DLC_CASE(CL_INVALID_COMMAND_QUEUE) DLC_CASE(CL_INVALID_HOST_PTR) DLC_CASE(CL_INVALID_MEM_OBJECT)
    DLC_CASE(CL_INVALID_BINARY) DLC_CASE(CL_INVALID_BUILD_OPTIONS) DLC_CASE(CL_INVALID_PROGRAM)
    DLC_CASE(CL_INVALID_PROGRAM_EXECUTABLE) DLC_CASE(CL_INVALID_KERNEL_NAME)
    DLC_CASE(CL_INVALID_KERNEL_DEFINITION) DLC_CASE(CL_INVALID_KERNEL) DLC_CASE(CL_INVALID_ARG_INDEX)
    DLC_CASE(CL_INVALID_ARG_VALUE) DLC_CASE(CL_INVALID_ARG_SIZE) DLC_CASE(CL_INVALID_KERNEL_ARGS)
    DLC_CASE(CL_INVALID_WORK_DIMENSION) DLC_CASE(CL_INVALID_WORK_GROUP_SIZE)
    DLC_CASE(CL_INVALID_WORK_ITEM_SIZE) DLC_CASE(CL_INVALID_GLOBAL_OFFSET)
    DLC_CASE(CL_INVALID_EVENT_WAIT_LIST) DLC_CASE(CL_INVALID_EVENT) DLC_CASE(CL_INVALID_OPERATION)
    DLC_CASE(CL_INVALID_BUFFER_SIZE) DLC_CASE(CL_INVALID_GLOBAL_WORK_SIZE)
    DLC_CASE(CL_INVALID_PROPERTY)
#undef DLC_CASE
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "unknown OpenCL error";
  }
}

}  // namespace dlcaffe
