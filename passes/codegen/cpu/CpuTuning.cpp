//===- CpuTuning.cpp - the per-target table of the CPU recipe -------------===//
//
// What differs between vector widths is the register tile; the other numbers
// are the defaults of CpuTuning (their reasons are given there).
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/cpu/CpuTuning.h"

using namespace mlir::hkt;

namespace {
/// Ordered by width.
const CpuTuning kTable[] = {
    // SSE (16 xmm registers, as AVX2): the AVX2 tile shape, 6 x 8. Not
    // measured (no SSE-only machine seen).
    {/*vectorBits=*/128, /*regRows=*/6},
    // AVX2 (16 ymm registers): 6 x 16, 12 accumulators + 2 operand vectors
    // + 1 broadcast (BLIS's Haswell/Zen shape). With the accumulators kept
    // in registers across K (hkt-cpu-hoist-vector-accumulators), 8 accumulators
    // (4 x 16) only just cover the FMA latency on 2 pipes and every late
    // load stalls them (docs/performance.md, issue 11). 64-row blocks split
    // into 60 rows of 6 x 16 tiles and 4 of 4 x 16.
    {/*vectorBits=*/256, /*regRows=*/6},
    // AVX-512 (32 zmm registers): 8 x 32, 16 accumulators: ~255 GFLOP/s on
    // one thread for a 4096 x 512 x 512 matmul, 94-95% of the FMA peak
    // (TOOLCHAIN.md).
    {/*vectorBits=*/512, /*regRows=*/8},
};
} // namespace

const CpuTuning &mlir::hkt::cpuTuningFor(int64_t vectorBits) {
  const CpuTuning *best = &kTable[0];
  for (const CpuTuning &entry : kTable)
    if (entry.vectorBits <= vectorBits)
      best = &entry;
  return *best;
}

llvm::ArrayRef<RegisterTile>
mlir::hkt::registerTileCandidates(int64_t vectorBits) {
  // 16 registers: 6x2 (12 accumulators + 2 + 1), 4x2, 3x4 (12 + 4... with
  // the broadcast 17: one reload a step, measured as a candidate).
  static const RegisterTile k16[] = {{6, 2}, {4, 2}, {3, 4}};
  // 32 registers: 8x2 (16 + 3), 12x2 (24 + 3), 6x4 (24 + 5), 4x4 (16 + 5).
  static const RegisterTile k32[] = {{8, 2}, {12, 2}, {6, 4}, {4, 4}};
  if (vectorBits >= 512)
    return k32;
  return k16;
}
