//===- MpiWorld.h - The processes of a data-parallel run -------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// A data-parallel training run (docs/training.md, "Several processes") is N
// processes that an MPI launcher (mpirun) started; the module's train step
// sums the gradients over them itself (MPI_Allreduce in its code). The
// driver around it needs a few more collectives: MPI's set-up and end, the
// sums of a sharded evaluation, a check that the replicas agree, and a way
// to stop every rank at once. They come from Open MPI's library, opened at
// run time (the module loader opened it already, global): nothing links
// MPI, so a process without it runs every other module.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_TRAIN_MPIWORLD_H
#define HKT_RUNTIME_TRAIN_MPIWORLD_H

#include "runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hkt::train {

/// The number of processes a launcher started this one among (Open MPI's
/// OMPI_COMM_WORLD_SIZE, else PMI_SIZE / PMIX_SIZE), 1 without one; read
/// without loading MPI.
int launchedRanks();

class MpiWorld {
public:
  /// Initialises MPI (MPI_Init_thread, funneled: only the calling thread
  /// calls MPI; OpenMP's threads compute) in MPI_COMM_WORLD. Call once.
  static runtime::Expected<MpiWorld> init();

  int rank() const { return myRank; }
  int size() const { return worldSize; }

  /// Sums `values` over the ranks, in place (every rank gets the sums).
  runtime::Status sum(std::vector<double> &values) const;
  /// Rank 0's `bytes` bytes at `data` on every rank (in place).
  runtime::Status broadcast(void *data, size_t bytes) const;
  /// True on every rank if every rank passed the same `value`.
  runtime::Expected<bool> allEqual(uint64_t value) const;
  /// Ends the whole run now: MPI_Abort, every rank exits with `code`.
  [[noreturn]] void abort(int code) const;
  /// MPI_Finalize, after the last collective of a run that went well.
  runtime::Status finalize() const;

private:
  MpiWorld() = default;
  int myRank = 0, worldSize = 1;
};

} // namespace hkt::train

#endif // HKT_RUNTIME_TRAIN_MPIWORLD_H
