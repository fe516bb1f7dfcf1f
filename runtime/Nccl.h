//===- Nccl.h - NCCL for the gradient sums of data-parallel GPU modules -*- C++
//-*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// A cuda module compiled with `hkt-compile --ranks N` (manifest:
// data_parallel.backend "nccl") sums its train step's gradients on the
// device: its host code calls hktNcclAllReduceF32 (hkt-nvvm-allreduce-to-
// nccl), which this file implements on NCCL's ncclAllReduce. NCCL's library
// (libnccl.so.2, or the file HKT_NCCL names) is opened at run time like the
// driver, and no NCCL header is needed: the few types are declared here as
// nccl.h defines them.
//
// The communicator spans the processes of the MPI job (the launcher is
// mpirun, as on the CPU): rank 0 makes the ncclUniqueId, MPI broadcasts it
// (the caller's `broadcast`, so that this library does not depend on MPI),
// every rank calls ncclCommInitRank. hkt-run train does this after joining
// the MPI world; a module's collective entry refuses to run before.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_NCCL_H
#define HKT_RUNTIME_NCCL_H

#include "runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>

namespace hkt::runtime {

/// Sends `bytes` bytes at `data` from rank 0 to every rank (in place).
using BroadcastFromRank0 = std::function<Status(void *data, size_t bytes)>;

/// Makes this process rank `rank` of an NCCL communicator of `size` ranks on
/// its CUDA device (cudaDriver() first: the communicator lives on the
/// current context). Collective: every rank calls it. Errors name the
/// library ("no NCCL: cannot load libnccl.so.2 ...; install ...") or the
/// failing call with NCCL's message.
Status joinNcclWorld(int rank, int size, const BroadcastFromRank0 &broadcast);
/// The size of the communicator joinNcclWorld made; 0 before.
int ncclWorldSize();
/// Destroys the communicator (after the last collective of a run that went
/// well; an aborted run ends the process instead).
void leaveNcclWorld();
/// "NCCL 2.28.3 (/usr/lib/x86_64-linux-gnu/libnccl.so.2)", or why it does
/// not load, without joining anything.
Expected<std::string> ncclVersion();

} // namespace hkt::runtime

/// The all-reduce a data-parallel GPU module's host code calls (declared by
/// hkt-nvvm-allreduce-to-nccl): recv = op over the ranks of send, two 1-D
/// f32 memref descriptors (allocated and aligned pointers, offset, size,
/// stride) of device memory and NCCL's ncclRedOp_t. Errors are recorded like
/// the driver's (takeCudaError).
extern "C" void hktNcclAllReduceF32(float *, float *, int64_t, int64_t, int64_t,
                                    float *, float *, int64_t, int64_t, int64_t,
                                    int32_t);

#endif // HKT_RUNTIME_NCCL_H
