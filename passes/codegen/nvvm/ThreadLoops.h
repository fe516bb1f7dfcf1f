//===- ThreadLoops.h - a GPU block's threads as loops between barriers ----===//
//
// Part of the gpu-emulation target (EmulateOnCpu.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_CODEGEN_NVVM_THREADLOOPS_H
#define HKT_PASSES_CODEGEN_NVVM_THREADLOOPS_H

#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Support/LLVM.h"

namespace mlir::hkt {

/// Attribute on a per-thread memref.alloca of the team that only lane 0 of
/// each warp touches (the wmma fragments): one copy per warp is enough.
constexpr StringLiteral kPerWarpAttr = "hkt.emulation.per_warp";

/// Replaces `team` (an omp.parallel of `threads` threads, one per GPU thread,
/// whose ids are `tid`, synchronised by omp.barrier) by the same block run
/// on one OS thread: the code between two barriers one loop over the
/// threads (MCUDA's thread loops). A barrier under scf.for or scf.if makes
/// that op run once for the block (its bounds or condition must agree
/// across the threads: checked at run time with cf.assert), its loop-carried
/// values and results per-thread buffers. A value used past a barrier is
/// recomputed in the later loop when it is cheap and pure (index
/// arithmetic, views, constants), else kept in a per-thread buffer. The
/// team's private allocas become one slice per thread (per warp with
/// kPerWarpAttr) of one buffer. Buffers are heap allocations made at the
/// start of `scope` and freed before its terminator (one block of the grid
/// per iteration of `scope`'s loop, so blocks may run in parallel).
LogicalResult formThreadLoops(omp::ParallelOp team, Value tid, Value threads,
                              Block *scope, StringRef kernelName);

} // namespace mlir::hkt

#endif // HKT_PASSES_CODEGEN_NVVM_THREADLOOPS_H
