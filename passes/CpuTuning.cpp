//===- CpuTuning.cpp - the per-target table of the CPU recipe -------------===//
//
// What differs between vector widths is the register tile; the other numbers
// are the defaults of CpuTuning (their reasons are given there).
//
//===----------------------------------------------------------------------===//

#include "passes/CpuTuning.h"

using namespace mlir::hkt;

namespace {
/// Ordered by width.
const CpuTuning kTable[] = {
    // SSE (16 xmm registers): the AVX2 tile, 8 accumulators of 4 lanes.
    // Not measured (no SSE-only machine seen).
    {/*vectorBits=*/128, /*regRows=*/4},
    // AVX2 (16 ymm registers): 4 x 16, 8 accumulators, just enough to
    // cover the FMA latency on 2 pipes; a 6 x 16 tile (12 accumulators)
    // measured no faster (docs/performance.md, "What limits the kernel").
    {/*vectorBits=*/256, /*regRows=*/4},
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
