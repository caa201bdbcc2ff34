#include "core/matrix_engine.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include <glog/logging.h>

#include "core/storage_convert.hpp"

// cl_nv_device_attribute_query (cl_ext_nv.h is not always installed).
#ifndef CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#endif

namespace dlcaffe {

namespace {

// Per device: the forms turned off, and the compute capability (asked of
// the driver once, not at every product).
std::mutex devices_mutex;
std::set<std::pair<cl_device_id, int>>& DisabledForms() {
  static std::set<std::pair<cl_device_id, int>> disabled;
  return disabled;
}
std::map<cl_device_id, int>& Capabilities() {
  static std::map<cl_device_id, int> capabilities;
  return capabilities;
}

}  // namespace

const char* MmaFormName(MmaForm form) {
  switch (form) {
    case MmaForm::kF16: return "f16";
    case MmaForm::kBF16: return "bf16";
    case MmaForm::kTF32: return "tf32";
    case MmaForm::kNone: break;
  }
  return "none";
}

int MmaMantissaBits(MmaForm form) {
  switch (form) {
    case MmaForm::kF16: return 11;
    case MmaForm::kBF16: return 8;
    case MmaForm::kTF32: return 11;
    case MmaForm::kNone: break;
  }
  return 24;
}

int NvidiaComputeCapability(const DeviceInfo& info) {
  if (!info.device_id || !info.has_extension("cl_nv_device_attribute_query")) return 0;
  cl_uint major = 0, minor = 0;
  if (clGetDeviceInfo(info.device_id, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof major,
                      &major, nullptr) != CL_SUCCESS ||
      clGetDeviceInfo(info.device_id, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof minor,
                      &minor, nullptr) != CL_SUCCESS)
    return 0;
  return static_cast<int>(10 * major + minor);
}

MmaForm MmaFormFor(const Context& ctx, const LayerChoices& choices, MatrixMath math) {
  if (math == MatrixMath::kFloat32 || !choices.matrix_engine) return MmaForm::kNone;
  // The instruction lives in the GPU-shaped kernel.
  if (choices.cpu_shaped_kernels) return MmaForm::kNone;
  const MmaForm form = math == MatrixMath::kFloat16    ? MmaForm::kF16
                       : math == MatrixMath::kBFloat16 ? MmaForm::kBF16
                                                       : MmaForm::kTF32;
  const cl_device_id device = ctx.info().device_id;
  std::lock_guard<std::mutex> lock(devices_mutex);
  auto known = Capabilities().find(device);
  if (known == Capabilities().end())
    known = Capabilities().emplace(device, NvidiaComputeCapability(ctx.info())).first;
  if (known->second < 80) return MmaForm::kNone;
  if (DisabledForms().count({ctx.info().device_id, static_cast<int>(form)}))
    return MmaForm::kNone;
  return form;
}

void DisableMmaForm(const Context& ctx, MmaForm form, const std::string& why) {
  std::lock_guard<std::mutex> lock(devices_mutex);
  if (!DisabledForms().insert({ctx.info().device_id, static_cast<int>(form)}).second) return;
  LOG(WARNING) << ctx.info().Describe() << ": the " << MmaFormName(form)
               << " tensor-core GEMM did not build, so products run the float kernels ("
               << why << ")";
}

namespace {
// A form's pipeline in the set of disabled forms, under a key no form has.
int PipelineKey(MmaForm form) { return 16 + static_cast<int>(form); }
}  // namespace

bool MmaPipelineEnabled(const Context& ctx, MmaForm form) {
  if (form == MmaForm::kNone) return false;
  std::lock_guard<std::mutex> lock(devices_mutex);
  return !DisabledForms().count({ctx.info().device_id, PipelineKey(form)});
}

void DisableMmaPipeline(const Context& ctx, MmaForm form, const std::string& why) {
  std::lock_guard<std::mutex> lock(devices_mutex);
  if (!DisabledForms().insert({ctx.info().device_id, PipelineKey(form)}).second) return;
  LOG(WARNING) << ctx.info().Describe() << ": the " << MmaFormName(form)
               << " tensor-core GEMM's cp.async pipeline did not build, so products stage "
                  "their tiles through registers ("
               << why << ")";
}

StorageType MmaInputType(MmaForm form) {
  switch (form) {
    case MmaForm::kF16: return StorageType::kFloat16;
    case MmaForm::kBF16: return StorageType::kBFloat16;
    default: return StorageType::kFloat32;
  }
}

bool MmaRoundsTo(const Context& ctx, const LayerChoices& choices, MatrixMath math,
                 StorageType storage) {
  const MmaForm form = MmaFormFor(ctx, choices, math);
  return form != MmaForm::kNone && MmaInputType(form) == storage;
}

BufferPtr MmaRoundedWeights(Context& ctx, const LayerChoices& choices, cl_mem weights,
                            int count, MatrixMath math, StorageType storage) {
  if (storage == StorageType::kFloat32 || !MmaRoundsTo(ctx, choices, math, storage))
    return nullptr;
  BufferPtr rounded = ctx.Allocate(StorageBytes(storage) * size_t(std::max(count, 1)));
  ConvertStorage(ctx, weights, 0, StorageType::kFloat32, rounded->mem(), 0, storage, count);
  return rounded;
}

BufferPtr MmaRoundedWeights(Context& ctx, const LayerChoices& choices, const Blob& weights,
                            MatrixMath math, StorageType storage, DerivedCopy& copy) {
  if (storage == StorageType::kFloat32 || !MmaRoundsTo(ctx, choices, math, storage))
    return nullptr;
  return copy.Get(weights, static_cast<int>(storage), [&] {
    return MmaRoundedWeights(ctx, choices, weights.data(), weights.count(), math, storage);
  });
}

bool MmaPipelineStreams(const Context& ctx, const LayerChoices& choices, MatrixMath math,
                        StorageType storage) {
  return choices.matrix_pipeline && MmaRoundsTo(ctx, choices, math, storage) &&
         MmaPipelineEnabled(ctx, MmaFormFor(ctx, choices, math));
}

}  // namespace dlcaffe
