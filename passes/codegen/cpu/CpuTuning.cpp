//===- CpuTuning.cpp - the per-target table of the CPU recipe -------------===//
//
// What differs between vector widths is the register tile; the other numbers
// are the defaults of CpuTuning (their reasons are given there). hkt-compile
// takes the register tile from the microarchitecture family of the target
// CPU (cpuFamilyFor), the width's entry here being what hkt-opt's pass uses
// when no tile is given.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/cpu/CpuTuning.h"

#include "llvm/ADT/STLExtras.h"

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

namespace {
/// The families, their LLVM CPU names and the measurements behind each tile
/// (docs/performance.md, "Defaults per microarchitecture family"). Every
/// --tune candidate of a width was timed on the layer (D = 512, H = 8,
/// T = 4096, MHA and HKT, 2 threads, interleaved rounds) where a host of the
/// family was at hand; where none was, the entry says so.
struct FamilyEntry {
  CpuFamily family;
  llvm::ArrayRef<llvm::StringRef> cpus;
};

// AMD Zen 1-3: 16 ymm registers, 2 FMA pipes (4 FP pipes). 6 x 2 measured on
// a Zen 3 against 4 x 2 and 4 x 1 (issue 11: 58% of the FMA peak for HKT).
const llvm::StringRef kZen3[] = {"znver1", "znver2", "znver3"};
// AMD Zen 4/5: 32 zmm registers (Zen 4 runs a 512-bit op as two 256-bit
// halves, Zen 5 natively). 8 x 2 measured on a Zen 5 at 63-66% of the FMA
// peak for HKT and MHA (issue 27); the other candidates were not compared
// there, and no Zen 4 was at hand.
const llvm::StringRef kZen45[] = {"znver4", "znver5"};
// Intel with AVX-512 (Skylake-X to Granite Rapids): 32 zmm registers, 2 FMA
// ports (one on some client parts). Measured on an Emerald Rapids: 8 x 2,
// 12 x 2 and 6 x 4 within 5% of one another (less than the host's noise),
// 4 x 4 3-5% slower; 8 x 2 kept, the tile with the fewest registers.
const llvm::StringRef kIntelAvx512[] = {
    "skylake-avx512", "skylake_avx512", "cascadelake",   "cooperlake",
    "cannonlake",     "icelake-client", "icelake_client", "icelake-server",
    "icelake_server", "tigerlake",      "rocketlake",     "sapphirerapids",
    "emeraldrapids",  "graniterapids",  "graniterapids-d", "graniterapids_d",
    "diamondrapids"};

const FamilyEntry kFamilies[] = {
    {{"zen3", 256, {6, 2}}, kZen3},
    {{"zen4-5", 512, {8, 2}}, kZen45},
    {{"intel-avx512", 512, {8, 2}}, kIntelAvx512},
};

// The generic family of each width, for the CPUs above whose vectors the
// target narrows and for every other CPU (Intel's AVX2 cores, x86-64-v3/v4):
// the width's entry of kTable. AVX2: 6 x 2 measured as x86-64-v3 code on the
// Emerald Rapids, 10-20% ahead of 4 x 2 and 3 x 4 (and Zen 3's choice).
// AVX-512: the Intel family's tile. SSE: the AVX2 shape, not measured.
CpuFamily generic(const char *name, int64_t vectorBits) {
  const CpuTuning &entry = cpuTuningFor(vectorBits);
  return {name, vectorBits, {entry.regRows, entry.regVectors}};
}
const CpuFamily kGeneric[] = {
    generic("sse", 128),
    generic("avx2", 256),
    generic("avx512", 512),
};
} // namespace

const CpuFamily &mlir::hkt::cpuFamilyFor(llvm::StringRef cpu,
                                         int64_t vectorBits) {
  for (const FamilyEntry &entry : kFamilies)
    if (entry.family.vectorBits == vectorBits &&
        llvm::is_contained(entry.cpus, cpu))
      return entry.family;
  const CpuFamily *best = &kGeneric[0];
  for (const CpuFamily &generic : kGeneric)
    if (generic.vectorBits <= vectorBits)
      best = &generic;
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
