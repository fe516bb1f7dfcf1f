//===- MpiWorld.cpp - The processes of a data-parallel run ----------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Open MPI's functions and predefined handles through dlsym: mpi.h gives
// their types, but its MPI_COMM_WORLD, MPI_DOUBLE, ... are addresses of
// symbols of libmpi, which this library does not link.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/MpiWorld.h"
#include "runtime/CompiledModule.h"
#include "runtime/Internal.h"

// The C API only: Open MPI's C++ bindings would call into libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdlib>
#include <dlfcn.h>

using namespace hkt::runtime;
using namespace hkt::train;
using hkt::runtime::detail::concat;

namespace {

/// The Open MPI entry points this file calls, resolved once.
struct OpenMpi {
  decltype(&::MPI_Initialized) initialized = nullptr;
  decltype(&::MPI_Init_thread) initThread = nullptr;
  decltype(&::MPI_Comm_rank) commRank = nullptr;
  decltype(&::MPI_Comm_size) commSize = nullptr;
  decltype(&::MPI_Allreduce) allreduce = nullptr;
  decltype(&::MPI_Bcast) bcast = nullptr;
  decltype(&::MPI_Abort) abortAll = nullptr;
  decltype(&::MPI_Finalize) finalize = nullptr;
  MPI_Comm world = nullptr;
  MPI_Datatype float64 = nullptr, uint64 = nullptr, byte = nullptr;
  MPI_Op sum = nullptr, min = nullptr, max = nullptr;
};

Expected<const OpenMpi *> openMpi() {
  static OpenMpi api;
  static std::string error;
  static bool loaded = [] {
    Expected<void *> handle = openMpiLibrary();
    if (!handle) {
      error = "MPI needs " + handle.message();
      return false;
    }
    void *lib = *handle;
    bool ok = true;
    auto bind = [&](auto &into, const char *name) {
      void *sym = ::dlsym(lib, name);
      if (!sym) {
        error = concat("the MPI library has no symbol '", name,
                       "': not Open MPI 4 or later");
        ok = false;
      }
      into = reinterpret_cast<std::remove_reference_t<decltype(into)>>(sym);
    };
    bind(api.initialized, "MPI_Initialized");
    bind(api.initThread, "MPI_Init_thread");
    bind(api.commRank, "MPI_Comm_rank");
    bind(api.commSize, "MPI_Comm_size");
    bind(api.allreduce, "MPI_Allreduce");
    bind(api.bcast, "MPI_Bcast");
    bind(api.abortAll, "MPI_Abort");
    bind(api.finalize, "MPI_Finalize");
    // Open MPI's mpi.h: MPI_COMM_WORLD is &ompi_mpi_comm_world, ...
    bind(api.world, "ompi_mpi_comm_world");
    bind(api.float64, "ompi_mpi_double");
    bind(api.uint64, "ompi_mpi_uint64_t");
    bind(api.byte, "ompi_mpi_byte");
    bind(api.sum, "ompi_mpi_op_sum");
    bind(api.min, "ompi_mpi_op_min");
    bind(api.max, "ompi_mpi_op_max");
    return ok;
  }();
  if (!loaded)
    return Status::error(error);
  return &api;
}

Status mpiError(const char *call, int code) {
  return Status::error(concat(call, " failed (MPI error ", code, ")"));
}

} // namespace

int hkt::train::launchedRanks() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char *v = std::getenv(name); v && *v) {
      int n = std::atoi(v);
      if (n > 0)
        return n;
    }
  return 1;
}

Expected<MpiWorld> MpiWorld::init() {
  Expected<const OpenMpi *> api = openMpi();
  if (!api)
    return api.status();
  const OpenMpi &mpi = **api;
  int done = 0;
  if (int rc = mpi.initialized(&done); rc != MPI_SUCCESS)
    return mpiError("MPI_Initialized", rc);
  if (!done) {
    int provided = 0;
    if (int rc =
            mpi.initThread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        rc != MPI_SUCCESS)
      return mpiError("MPI_Init_thread", rc);
  }
  MpiWorld w;
  if (int rc = mpi.commRank(mpi.world, &w.myRank); rc != MPI_SUCCESS)
    return mpiError("MPI_Comm_rank", rc);
  if (int rc = mpi.commSize(mpi.world, &w.worldSize); rc != MPI_SUCCESS)
    return mpiError("MPI_Comm_size", rc);
  return w;
}

Status MpiWorld::sum(std::vector<double> &values) const {
  const OpenMpi &mpi = **openMpi();
  if (int rc = mpi.allreduce(MPI_IN_PLACE, values.data(),
                             static_cast<int>(values.size()), mpi.float64,
                             mpi.sum, mpi.world);
      rc != MPI_SUCCESS)
    return mpiError("MPI_Allreduce", rc);
  return Status::success();
}

Status MpiWorld::broadcast(void *data, size_t bytes) const {
  const OpenMpi &mpi = **openMpi();
  if (int rc = mpi.bcast(data, static_cast<int>(bytes), mpi.byte, /*root=*/0,
                         mpi.world);
      rc != MPI_SUCCESS)
    return mpiError("MPI_Bcast", rc);
  return Status::success();
}

Expected<bool> MpiWorld::allEqual(uint64_t value) const {
  const OpenMpi &mpi = **openMpi();
  uint64_t low = value, high = value;
  if (int rc =
          mpi.allreduce(MPI_IN_PLACE, &low, 1, mpi.uint64, mpi.min, mpi.world);
      rc != MPI_SUCCESS)
    return mpiError("MPI_Allreduce", rc);
  if (int rc =
          mpi.allreduce(MPI_IN_PLACE, &high, 1, mpi.uint64, mpi.max, mpi.world);
      rc != MPI_SUCCESS)
    return mpiError("MPI_Allreduce", rc);
  return low == high;
}

void MpiWorld::abort(int code) const {
  const OpenMpi &mpi = **openMpi();
  mpi.abortAll(mpi.world, code);
  std::_Exit(code); // MPI_Abort does not return; in case it did.
}

Status MpiWorld::finalize() const {
  const OpenMpi &mpi = **openMpi();
  if (int rc = mpi.finalize(); rc != MPI_SUCCESS)
    return mpiError("MPI_Finalize", rc);
  return Status::success();
}
