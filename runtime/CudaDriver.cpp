//===- CudaDriver.cpp - The CUDA driver API, opened at run time -----------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/CudaDriver.h"
#include "runtime/Internal.h"
#include "runtime/Manifest.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

using namespace hkt::runtime;
using hkt::runtime::detail::concat;

namespace {
constexpr CUresult kSuccess = 0;
constexpr CUresult kNoDevice = 100;         // CUDA_ERROR_NO_DEVICE
constexpr int kComputeCapabilityMajor = 75; // CU_DEVICE_ATTRIBUTE_*
constexpr int kComputeCapabilityMinor = 76;

struct DriverState {
  CudaDriverApi api{};
  CudaDevice device;
  Status status;
};

/// Resolves every function; the _v2 names are those the driver exports for
/// the 64-bit API (cuda.h's #defines).
Status resolve(void *lib, CudaDriverApi &api, const std::string &path) {
  auto get = [&](auto &fn, const char *name) -> bool {
    void *sym = ::dlsym(lib, name);
    std::memcpy(&fn, &sym, sizeof(sym));
    return sym != nullptr;
  };
  struct Entry {
    bool ok;
    const char *name;
  };
  const Entry entries[] = {
      {get(api.cuInit, "cuInit"), "cuInit"},
      {get(api.cuDriverGetVersion, "cuDriverGetVersion"), "cuDriverGetVersion"},
      {get(api.cuDeviceGetCount, "cuDeviceGetCount"), "cuDeviceGetCount"},
      {get(api.cuDeviceGet, "cuDeviceGet"), "cuDeviceGet"},
      {get(api.cuDeviceGetAttribute, "cuDeviceGetAttribute"),
       "cuDeviceGetAttribute"},
      {get(api.cuDeviceGetName, "cuDeviceGetName"), "cuDeviceGetName"},
      {get(api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
       "cuDevicePrimaryCtxRetain"},
      {get(api.cuCtxSetCurrent, "cuCtxSetCurrent"), "cuCtxSetCurrent"},
      {get(api.cuModuleLoadData, "cuModuleLoadData"), "cuModuleLoadData"},
      {get(api.cuModuleLoadDataEx, "cuModuleLoadDataEx"), "cuModuleLoadDataEx"},
      {get(api.cuModuleUnload, "cuModuleUnload"), "cuModuleUnload"},
      {get(api.cuModuleGetFunction, "cuModuleGetFunction"),
       "cuModuleGetFunction"},
      {get(api.cuFuncSetAttribute, "cuFuncSetAttribute"), "cuFuncSetAttribute"},
      {get(api.cuLaunchKernel, "cuLaunchKernel"), "cuLaunchKernel"},
      {get(api.cuStreamCreate, "cuStreamCreate"), "cuStreamCreate"},
      {get(api.cuStreamSynchronize, "cuStreamSynchronize"),
       "cuStreamSynchronize"},
      {get(api.cuStreamDestroy, "cuStreamDestroy_v2"), "cuStreamDestroy_v2"},
      {get(api.cuStreamWaitEvent, "cuStreamWaitEvent"), "cuStreamWaitEvent"},
      {get(api.cuEventCreate, "cuEventCreate"), "cuEventCreate"},
      {get(api.cuEventDestroy, "cuEventDestroy_v2"), "cuEventDestroy_v2"},
      {get(api.cuEventRecord, "cuEventRecord"), "cuEventRecord"},
      {get(api.cuEventSynchronize, "cuEventSynchronize"), "cuEventSynchronize"},
      {get(api.cuEventElapsedTime, "cuEventElapsedTime"), "cuEventElapsedTime"},
      {get(api.cuMemAlloc, "cuMemAlloc_v2"), "cuMemAlloc_v2"},
      {get(api.cuMemAllocManaged, "cuMemAllocManaged"), "cuMemAllocManaged"},
      {get(api.cuMemFree, "cuMemFree_v2"), "cuMemFree_v2"},
      {get(api.cuMemcpyAsync, "cuMemcpyAsync"), "cuMemcpyAsync"},
      {get(api.cuMemsetD32Async, "cuMemsetD32Async"), "cuMemsetD32Async"},
      {get(api.cuMemHostRegister, "cuMemHostRegister_v2"),
       "cuMemHostRegister_v2"},
      {get(api.cuMemHostUnregister, "cuMemHostUnregister"),
       "cuMemHostUnregister"},
      {get(api.cuGetErrorName, "cuGetErrorName"), "cuGetErrorName"},
      {get(api.cuGetErrorString, "cuGetErrorString"), "cuGetErrorString"},
  };
  for (const Entry &e : entries)
    if (!e.ok)
      return Status::error(concat("no CUDA driver: '", path,
                                  "' has no function ", e.name,
                                  " (a driver too old, or not libcuda)"));
  return Status::success();
}

/// The device this process uses among `count`: HKT_CUDA_DEVICE, else the
/// launcher's local rank (the ranks of a data-parallel run on one node
/// take one GPU each; docs/training.md) modulo `count`, else device 0.
Expected<int> deviceOrdinal(int count) {
  if (const char *env = std::getenv("HKT_CUDA_DEVICE"); env && *env) {
    char *end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (*end || n < 0 || n >= count)
      return Status::error(concat("HKT_CUDA_DEVICE is '", env,
                                  "': expected a device number in [0, ", count,
                                  ") (the driver reports ", count, " device",
                                  count == 1 ? "" : "s", ")"));
    return static_cast<int>(n);
  }
  for (const char *name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char *env = std::getenv(name); env && *env) {
      char *end = nullptr;
      long n = std::strtol(env, &end, 10);
      if (!*end && n >= 0)
        return static_cast<int>(n % count);
    }
  return 0;
}

DriverState &state() {
  static DriverState s;
  static std::once_flag once;
  std::call_once(once, [] {
    const char *env = std::getenv("HKT_CUDA_DRIVER");
    std::string path = env && *env ? env : "libcuda.so.1";
    // Never closed: kernels and contexts live until the process ends.
    void *lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *err = ::dlerror();
      s.status = Status::error(concat(
          "no CUDA driver: cannot load ", path, " (",
          err ? err : "unknown error",
          "); install the NVIDIA driver, or run the module's cpu build"));
      return;
    }
    if (Status r = resolve(lib, s.api, path); !r.ok()) {
      s.status = r;
      return;
    }
    const CudaDriverApi &api = s.api;
    if (CUresult r = api.cuInit(0); r != kSuccess) {
      s.status = Status::error(
          r == kNoDevice
              ? concat("no CUDA device: ", cudaErrorText(api, r, "cuInit"))
              : concat("the CUDA driver failed to start: ",
                       cudaErrorText(api, r, "cuInit")));
      return;
    }
    int count = 0;
    if (CUresult r = api.cuDeviceGetCount(&count); r != kSuccess) {
      s.status = Status::error(cudaErrorText(api, r, "cuDeviceGetCount"));
      return;
    }
    if (count < 1) {
      s.status = Status::error("no CUDA device: the driver reports none");
      return;
    }
    Expected<int> ordinal = deviceOrdinal(count);
    if (!ordinal) {
      s.status = ordinal.status();
      return;
    }
    int dev = 0;
    char name[256] = {0};
    CUhandle ctx = nullptr;
    CUresult r = api.cuDeviceGet(&dev, *ordinal);
    const char *call = "cuDeviceGet";
    if (r == kSuccess) {
      call = "cuDeviceGetAttribute";
      r = api.cuDeviceGetAttribute(&s.device.major, kComputeCapabilityMajor,
                                   dev);
    }
    if (r == kSuccess)
      r = api.cuDeviceGetAttribute(&s.device.minor, kComputeCapabilityMinor,
                                   dev);
    if (r == kSuccess) {
      call = "cuDeviceGetName";
      r = api.cuDeviceGetName(name, sizeof name - 1, dev);
    }
    if (r == kSuccess) {
      call = "cuDevicePrimaryCtxRetain";
      r = api.cuDevicePrimaryCtxRetain(&ctx, dev);
    }
    if (r == kSuccess) {
      call = "cuCtxSetCurrent";
      r = api.cuCtxSetCurrent(ctx);
    }
    if (r != kSuccess) {
      s.status = Status::error(cudaErrorText(api, r, call));
      return;
    }
    s.device.ordinal = dev;
    s.device.name = name;
  });
  return s;
}
} // namespace

std::string CudaDevice::arch() const {
  return concat("sm_", major, minor);
}

std::string hkt::runtime::cudaErrorText(const CudaDriverApi &api,
                                        CUresult code, const char *call) {
  const char *name = nullptr, *text = nullptr;
  if (api.cuGetErrorName)
    api.cuGetErrorName(code, &name);
  if (api.cuGetErrorString)
    api.cuGetErrorString(code, &text);
  std::string out = concat(call, ": ");
  out += name ? name : concat("CUDA error ", code);
  if (text)
    out += concat(" (", text, ")");
  return out;
}

Expected<const CudaDriverApi *> hkt::runtime::cudaDriver() {
  DriverState &s = state();
  if (!s.status.ok())
    return s.status;
  return &s.api;
}

Expected<CudaDevice> hkt::runtime::cudaDevice() {
  DriverState &s = state();
  if (!s.status.ok())
    return s.status;
  return s.device;
}

Status hkt::runtime::checkCudaArch(const std::string &moduleArchs,
                                   const CudaDevice &device) {
  std::stringstream list(moduleArchs);
  std::string arch;
  while (std::getline(list, arch, ',')) {
    // "sm_90" or "sm_90a": major 9, minor 0.
    std::optional<CudaArch> parsed = parseCudaArch(arch);
    if (!parsed)
      return Status::error(concat("module target arch '", arch,
                                  "' is not of the form sm_XY"));
    if (parsed->major == device.major && parsed->minor <= device.minor)
      return Status::success();
  }
  return Status::error(concat("module built for ", moduleArchs, ", device is ",
                              device.arch(), " (", device.name,
                              "): recompile with hkt-compile --target nvvm "
                              "--chip ",
                              device.arch()));
}
