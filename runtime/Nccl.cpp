//===- Nccl.cpp - NCCL for the gradient sums of data-parallel GPU modules -===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/Nccl.h"
#include "runtime/CudaDriver.h"
#include "runtime/Internal.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>

using namespace hkt::runtime;
using hkt::runtime::detail::concat;

namespace {
// nccl.h's types: ncclResult_t and the enums are ints, a communicator a
// pointer, the unique id 128 bytes passed by value.
using NcclResult = int;
using NcclComm = void *;
struct NcclUniqueId {
  char internal[128];
};
constexpr int kNcclFloat32 = 7;

/// The NCCL functions the runtime uses, resolved from the library.
struct NcclApi {
  NcclResult (*getVersion)(int *);
  NcclResult (*getUniqueId)(NcclUniqueId *);
  NcclResult (*commInitRank)(NcclComm *, int, NcclUniqueId, int);
  NcclResult (*commDestroy)(NcclComm);
  NcclResult (*allReduce)(const void *, void *, size_t, int, int, NcclComm,
                          CUhandle);
  const char *(*getErrorString)(NcclResult);
  const char *(*getLastError)(NcclComm);
  std::string path;
};

/// The library, once per process: HKT_NCCL names another file.
Expected<const NcclApi *> ncclApi() {
  static Expected<const NcclApi *> loaded = []() -> Expected<const NcclApi *> {
    const char *env = std::getenv("HKT_NCCL");
    std::string path = env && *env ? env : "libnccl.so.2";
    void *lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *err = ::dlerror();
      return Status::error(concat(
          "no NCCL: cannot load ", path, " (", err ? err : "unknown error",
          "); a data-parallel GPU module sums its gradients with NCCL: "
          "install it (the CUDA toolkit's lib/ on the loader's path, or "
          "NVIDIA's libnccl2 package) or set HKT_NCCL to its file"));
    }
    static NcclApi api;
    api.path = path;
    const char *missing = nullptr;
    auto get = [&](auto &fn, const char *name) {
      void *sym = ::dlsym(lib, name);
      std::memcpy(&fn, &sym, sizeof(sym));
      if (!sym && !missing)
        missing = name;
    };
    get(api.getVersion, "ncclGetVersion");
    get(api.getUniqueId, "ncclGetUniqueId");
    get(api.commInitRank, "ncclCommInitRank");
    get(api.commDestroy, "ncclCommDestroy");
    get(api.allReduce, "ncclAllReduce");
    get(api.getErrorString, "ncclGetErrorString");
    get(api.getLastError, "ncclGetLastError");
    if (missing)
      return Status::error(concat("no NCCL: '", path, "' has no function ",
                                  missing,
                                  " (NCCL older than 2.13, or not "
                                  "NCCL)"));
    return &api;
  }();
  return loaded;
}

/// "ncclCommInitRank: NCCL error 2 (unhandled system error): <detail>".
std::string ncclErrorText(const NcclApi &api, NcclResult r, const char *call,
                          NcclComm comm) {
  std::string out = concat(call, ": NCCL error ", r);
  if (const char *text = api.getErrorString(r))
    out += concat(" (", text, ")");
  if (const char *last = api.getLastError(comm); last && *last)
    out += concat(": ", last);
  return out;
}

struct World {
  std::mutex mutex;
  NcclComm comm = nullptr;
  int size = 0;
};
World &world() {
  static World w;
  return w;
}
} // namespace

Expected<std::string> hkt::runtime::ncclVersion() {
  Expected<const NcclApi *> api = ncclApi();
  if (!api)
    return api.status();
  int v = 0;
  if (NcclResult r = (*api)->getVersion(&v); r != 0)
    return Status::error(ncclErrorText(**api, r, "ncclGetVersion", nullptr));
  // Since 2.9: major * 10000 + minor * 100 + patch.
  return concat("NCCL ", v / 10000, ".", v / 100 % 100, ".", v % 100, " (",
                (*api)->path, ")");
}

Status hkt::runtime::joinNcclWorld(int rank, int size,
                                   const BroadcastFromRank0 &broadcast) {
  Expected<const NcclApi *> api = ncclApi();
  if (!api)
    return api.status();
  if (Expected<const CudaDriverApi *> driver = cudaDriver(); !driver)
    return driver.status();
  World &w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  if (w.comm)
    return Status::error("joinNcclWorld: this process has joined already");
  NcclUniqueId id{};
  if (rank == 0)
    if (NcclResult r = (*api)->getUniqueId(&id); r != 0)
      return Status::error(ncclErrorText(**api, r, "ncclGetUniqueId", nullptr));
  if (Status s = broadcast(&id, sizeof id); !s.ok())
    return s;
  NcclComm comm = nullptr;
  if (NcclResult r = (*api)->commInitRank(&comm, size, id, rank); r != 0)
    return Status::error(
        concat(ncclErrorText(**api, r, "ncclCommInitRank", comm),
               " (NCCL_DEBUG=WARN says more)"));
  w.comm = comm;
  w.size = size;
  return Status::success();
}

int hkt::runtime::ncclWorldSize() {
  World &w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  return w.size;
}

void hkt::runtime::leaveNcclWorld() {
  World &w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  if (!w.comm)
    return;
  if (Expected<const NcclApi *> api = ncclApi())
    (*api)->commDestroy(w.comm);
  w.comm = nullptr;
  w.size = 0;
}

/// recv = op over the ranks of send (count floats each; device memory), on
/// the process's communicator. The arguments are the two 1-D memref
/// descriptors (allocated and aligned pointers, offset, size, stride) and
/// NCCL's ncclRedOp_t. Synchronous: the host code waits for its stream
/// before the call, NCCL runs on the default stream, and the call waits for
/// it, so the next launches read the sums. Errors are recorded like driver
/// errors and reported after the call.
extern "C" __attribute__((visibility("default"), used)) void
hktNcclAllReduceF32(float *, float *send, int64_t sendOffset, int64_t sendSize,
                    int64_t sendStride, float *, float *recv,
                    int64_t recvOffset, int64_t recvSize, int64_t recvStride,
                    int32_t op) {
  NcclComm comm = nullptr;
  {
    World &w = world();
    std::lock_guard<std::mutex> lock(w.mutex);
    comm = w.comm;
  }
  if (!comm) {
    recordCudaError("the module's NCCL all-reduce ran outside an NCCL "
                    "communicator (a data-parallel GPU module runs under "
                    "mpirun in hkt-run train, which makes one)");
    return;
  }
  Expected<const NcclApi *> api = ncclApi(); // loaded by joinNcclWorld
  if (sendSize != recvSize || sendStride != 1 || recvStride != 1) {
    recordCudaError(concat("hktNcclAllReduceF32: buffers of ", sendSize,
                           " and ", recvSize, " floats, strides ", sendStride,
                           " and ", recvStride,
                           " (expected one size, contiguous)"));
    return;
  }
  Expected<const CudaDriverApi *> driver = cudaDriver();
  if (!driver) {
    recordCudaError(driver.message());
    return;
  }
  if (NcclResult r = (*api)->allReduce(send + sendOffset, recv + recvOffset,
                                       static_cast<size_t>(sendSize),
                                       kNcclFloat32, op, comm, nullptr);
      r != 0) {
    recordCudaError(concat(ncclErrorText(**api, r, "ncclAllReduce", comm), " (",
                           sendSize, " floats)"));
    return;
  }
  if (CUresult r = (*driver)->cuStreamSynchronize(nullptr); r != 0)
    recordCudaError(cudaErrorText(**driver, r, "cuStreamSynchronize"));
}
