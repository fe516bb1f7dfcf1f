//===- CudaDriver.h - The CUDA driver API, opened at run time ---*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The runtime builds and runs on machines without CUDA: the driver library
// (libcuda.so.1, or the file HKT_CUDA_DRIVER names) is opened with dlopen the
// first time a module of target kind `cuda` is loaded, and every function is
// resolved by name. No CUDA header is needed: the few types are declared
// here, as the driver API defines them (handles are pointers, CUresult an
// int, CUdeviceptr a 64-bit integer).
//
// The `mgpu*` functions that MLIR's gpu-to-llvm lowering makes the host code
// call (../shared/gpu/RECIPE.md section 5) are implemented on top of this
// (CudaRuntimeWrappers.cpp); their driver errors are kept, with the error's
// name, and reported by Entry::call after the call.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_CUDADRIVER_H
#define HKT_RUNTIME_CUDADRIVER_H

#include "runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace hkt::runtime {

using CUresult = int;
using CUdeviceptr = uint64_t;
using CUhandle = void *; // CUcontext, CUmodule, CUfunction, CUstream, CUevent

/// The driver functions the runtime uses, resolved from the library.
struct CudaDriverApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(int *, int);
  CUresult (*cuDeviceGetAttribute)(int *, int, int);
  CUresult (*cuDeviceGetName)(char *, int, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUhandle *, int);
  CUresult (*cuCtxSetCurrent)(CUhandle);
  CUresult (*cuModuleLoadData)(CUhandle *, const void *);
  CUresult (*cuModuleLoadDataEx)(CUhandle *, const void *, unsigned, int *,
                                 void **);
  CUresult (*cuModuleUnload)(CUhandle);
  CUresult (*cuModuleGetFunction)(CUhandle *, CUhandle, const char *);
  CUresult (*cuFuncSetAttribute)(CUhandle, int, int);
  CUresult (*cuLaunchKernel)(CUhandle, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUhandle, void **,
                             void **);
  CUresult (*cuStreamCreate)(CUhandle *, unsigned);
  CUresult (*cuStreamSynchronize)(CUhandle);
  CUresult (*cuStreamDestroy)(CUhandle);
  CUresult (*cuStreamWaitEvent)(CUhandle, CUhandle, unsigned);
  CUresult (*cuEventCreate)(CUhandle *, unsigned);
  CUresult (*cuEventDestroy)(CUhandle);
  CUresult (*cuEventRecord)(CUhandle, CUhandle);
  CUresult (*cuEventSynchronize)(CUhandle);
  CUresult (*cuEventElapsedTime)(float *, CUhandle, CUhandle);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUhandle);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUhandle);
  CUresult (*cuMemHostRegister)(void *, size_t, unsigned);
  CUresult (*cuMemHostUnregister)(void *);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
};

/// The device the runtime uses: device 0, or the one HKT_CUDA_DEVICE names,
/// or under an MPI launcher the local rank's (modulo the device count).
struct CudaDevice {
  int ordinal = 0;
  int major = 0, minor = 0;
  std::string name;
  /// "sm_90".
  std::string arch() const;
};

/// The process's driver: opened, initialised and its device's (CudaDevice)
/// primary context made current on the first call; later calls return the same
/// result (a failure too). Errors: "no CUDA driver: ..." when the library
/// cannot be opened or lacks a function, "no CUDA device: ..." when cuInit
/// fails with CUDA_ERROR_NO_DEVICE or no device is found, otherwise the failing
/// call and the error's name and description.
Expected<const CudaDriverApi *> cudaDriver();
/// The process's device (after cudaDriver() succeeded).
Expected<CudaDevice> cudaDevice();

/// "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
std::string cudaErrorText(const CudaDriverApi &api, CUresult code,
                          const char *call);

/// Checks that code built for `moduleArchs` (one or more "sm_XY",
/// comma-separated) runs on `device`: a cubin runs on the same major
/// compute capability with an equal or higher minor one. The message says
/// both: "module built for sm_90, device is sm_80 (NVIDIA A100)".
Status checkCudaArch(const std::string &moduleArchs, const CudaDevice &device);

/// The first driver error the mgpu* functions met since the last call
/// (they cannot return one: MLIR's host code ignores their results); empty
/// if none. Clears it.
std::string takeCudaError();
/// The device time of the last finished call of a cuda entry, from CUDA
/// events recorded on its stream before its first kernel and after its last
/// one (the copies of the arguments in and the results out are outside it);
/// empty if the call launched nothing. Clears it.
std::optional<double> takeCudaKernelSpanMs();
/// Keeps `message` as the error of the call in flight (the first one
/// wins; takeCudaError returns it): for the runtime functions a module's
/// host code calls besides the mgpu* ones (cuBLASLt, NCCL), which cannot
/// return errors either.
void recordCudaError(const std::string &message);
/// Frees device memory the mgpu* functions allocated and did not free
/// (after a failed call), returns how many buffers.
size_t freeLeakedCudaMemory();
/// Makes sure the mgpu* functions are linked into the executable (they are
/// resolved by the modules' shared objects at dlopen time).
void linkCudaRuntimeWrappers();

} // namespace hkt::runtime

#endif // HKT_RUNTIME_CUDADRIVER_H
