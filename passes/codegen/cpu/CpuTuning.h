//===- CpuTuning.h - tuning numbers of the CPU codegen recipe ---*- C++ -*-===//
//
// Every number that hkt-cpu-codegen passes to the recipe library
// (passes/codegen/cpu/recipes/cpu-codegen.mlir), in one per-target table: one entry per
// vector register width. Each number says where it comes from: a
// measurement (docs/performance.md, shared/TOOLCHAIN.md) or, where none was
// made, that it was not measured.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_CPUTUNING_H
#define HKT_PASSES_CPUTUNING_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace mlir::hkt {

/// A register tile: accumulator rows x vectors of columns.
struct RegisterTile {
  int64_t rows, vectors;
};

/// The tile sizes of the CPU recipe for one vector register width. Sizes of
/// matmul tiles are upper bounds: the pass takes the largest divisor of the
/// op's extent up to each, so that every tile stays static.
struct CpuTuning {
  /// Vector register width in bits this entry is for.
  int64_t vectorBits;

  /// Register tile rows (M); the tile is regRows x regVectors vectors of
  /// accumulators. It must leave registers for the operands: tiles of more
  /// than ~16 accumulators (16 x 32, 8 x 64 with AVX-512) spill and gave
  /// 100-140 GFLOP/s instead of ~250 (TOOLCHAIN.md). Rows that it does not
  /// divide (64-row blocks and 6-row tiles) are split: the last ones get a
  /// register tile of their own height (hkt_gemm_split).
  int64_t regRows;

  /// Register tile columns in vectors (N = regVectors x lanes; the pass
  /// falls back to one vector when N is not a multiple of two).
  int64_t regVectors = 2;

  /// K step of a register tile (outer products per iteration of its K
  /// loop). Before hkt-cpu-hoist-vector-accumulators the accumulator was loaded
  /// and stored once per step; 1 -> 4 then took a 4096 x 512 x 512
  /// projection from ~60 to ~125 GFLOP/s on AVX2, 8 and 16 were slower
  /// (docs/performance.md, step 1). Now the accumulator stays in registers
  /// across K and the step only unrolls; not re-measured.
  int64_t regK = 4;

  /// Rows of a whole matmul per thread block (scf.forall). TOOLCHAIN.md's
  /// recipe reached 94-95% of the FMA peak with 128 or 64; 64 gives a
  /// 4096-row projection 64 blocks to share among the threads.
  int64_t threadRows = 64;

  /// Cache tiles of a whole matmul [N, K], the K loop outside N. Retuned
  /// together with the K step from TOOLCHAIN.md's [N 256, K 512]: with
  /// column panels outside rows, the layer went from ~550 to ~450 ms
  /// (docs/performance.md, step 1). K 256 -> 512 once the right operand is
  /// read from contiguous panels (RightOperandPanels.h): a register tile's
  /// accumulators are loaded and stored once per 512 K steps instead of
  /// twice, 2-4% on the layer at D = 512 on the Intel host
  /// (docs/performance.md, "the right operand in panels"); not measured on
  /// AMD.
  int64_t cacheN = 512;
  int64_t cacheK = 512;

  /// Elements added to each row of a whole matmul's right operand when its
  /// rows lie a multiple of 1 KiB apart (a copy, made once per call; 0: never).
  /// 512-wide weights (2 KiB rows) map a register tile's K x N panel onto
  /// two L1 sets; one cache line of padding took a 4096 x 512 x 512 matmul
  /// from ~41-53 to ~41-43 ms on one AVX2 core (docs/performance.md).
  int64_t padRows = 16;
  /// Only for matmuls of at least this many rows (the copy's cost against
  /// the 2 M K N flops).
  int64_t padMinRows = 256;

  /// Ops outside the loop nests (downsampling, hybrid head, packing,
  /// normalisation) are split across threads into this many equal parts
  /// (8, 4 or 2 when it does not divide the loop). Splitting took the
  /// serial part of the layer from 4.8% of the samples to ~0 and libomp's
  /// spin-wait from ~10% to ~4% (docs/performance.md, step 5); the part
  /// count itself was not tuned.
  int64_t splitParts = 16;

  /// Shortest parallel loop split across threads (shorter ones stay
  /// serial). Not measured.
  int64_t minSplitLoop = 64;

  /// Elements of a contiguous row vectorised at once in the split ops; a
  /// row that it does not divide is vectorised whole. Not measured.
  int64_t rowTile = 64;
};

/// The entry for a target with `vectorBits`-bit vector registers: the widest
/// entry not wider than the target, or the narrowest entry.
const CpuTuning &cpuTuningFor(int64_t vectorBits);

/// A microarchitecture family and the register tile hkt-compile uses for
/// it when neither --register-tile nor --tune chooses one. The families
/// and the measurements behind each tile are in CpuTuning.cpp.
struct CpuFamily {
  /// The manifest's `tiles.family`: "zen3", "zen4-5", "intel-avx512", or
  /// the generic family of a width, "avx512", "avx2" or "sse".
  const char *name;
  /// The vector width the family's tile is for.
  int64_t vectorBits;
  RegisterTile registerTile;
};

/// The family of the LLVM CPU `cpu` ("znver3", "sapphirerapids", the host's
/// name for --cpu native) when the code targets `vectorBits`-bit vectors:
/// the CPU's own family where the table knows it and its width is the
/// target's (a Zen 4 whose AVX-512 a hypervisor hides is compiled for AVX2),
/// else the generic family of the width.
const CpuFamily &cpuFamilyFor(llvm::StringRef cpu, int64_t vectorBits);

/// The register tiles hkt-compile --tune times for `vectorBits`-bit
/// registers (hkt-compile puts the family's tile first): those whose accumulators, operand
/// vectors and broadcast fit the register file (16 registers below
/// AVX-512, 32 with it), with 2 or 4 vectors a row (a 64-wide attention
/// tile holds whole ones).
llvm::ArrayRef<RegisterTile> registerTileCandidates(int64_t vectorBits);

} // namespace mlir::hkt

#endif // HKT_PASSES_CPUTUNING_H
