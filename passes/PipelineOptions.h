//===- PipelineOptions.h - names and defaults of the hkt pipelines -*- C++ -*-===//
//
// The names of the CPU pipelines and the defaults of their options, defined
// once: passes/codegen/*/Passes.td (option defaults), passes/Pipelines.cpp
// (registration), compiler/ and tools/hkt-compile (--pipeline, --tile-q,
// --tile-k) all use these. No MLIR headers: the compiler driver includes it
// too.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_PIPELINEOPTIONS_H
#define HKT_PASSES_PIPELINEOPTIONS_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace mlir::hkt {

/// `hkt-compile --pipeline` values.
inline constexpr llvm::StringLiteral kFusedPipeline = "fused";
inline constexpr llvm::StringLiteral kReferencePipeline = "reference";

/// The registered pipelines (`hkt-opt --hkt-cpu-fused-pipeline`).
inline constexpr llvm::StringLiteral kFusedPipelineArg =
    "hkt-cpu-fused-pipeline";
inline constexpr llvm::StringLiteral kReferencePipelineArg =
    "hkt-cpu-reference-pipeline";

/// Attention tile sizes of the fused path (hkt-cpu-lower-online-attention's
/// tile-q / tile-k, hkt-compile --tile-q / --tile-k): 64 x 64 score tiles
/// keep a tile's scores, P and the 64 x d accumulator in L1/L2 and gave the
/// benchmark table of docs/performance.md.
/// The gradient and training-step pipeline (hkt-compile --backward, and the
/// training entries of --model), and the default largest batch of a model.
inline constexpr llvm::StringLiteral kAutodiffPipelineArg =
    "hkt-autodiff-pipeline";
inline constexpr int64_t kDefaultMaxBatch = 1024;
inline constexpr int64_t kDefaultTileQ = 64;
inline constexpr int64_t kDefaultTileK = 64;
/// hkt.online_attention_backward on key sequences of at least this length
/// takes key tiles this many times wider than tile-k (LowerOnlineAttention.cpp).
inline constexpr int64_t kBackwardLongSequence = 8192;
inline constexpr int64_t kBackwardLongKeyTileFactor = 4;

/// The NVVM pipeline (`hkt-opt --hkt-nvvm-pipeline`, hkt-compile --target
/// nvvm).
inline constexpr llvm::StringLiteral kNvvmPipelineArg = "hkt-nvvm-pipeline";
inline constexpr llvm::StringLiteral kGpuEmulationPipelineArg =
    "hkt-gpu-emulation-pipeline";
/// Attention tiles of the GPU kernel: 64 rows (threads) per block, 32 keys
/// per shared tile keep the shared arrays of three levels at d = 64 under
/// 48 KiB (hkt-nvvm-lower-online-attention).
inline constexpr int64_t kDefaultGpuTileQ = 64;
inline constexpr int64_t kDefaultGpuTileK = 32;
/// The chips of hkt-compile --target nvvm without --chip (one fatbin).
inline constexpr llvm::StringLiteral kDefaultGpuChips = "sm_80,sm_90";
inline constexpr llvm::StringLiteral kDefaultCudaPath = "/usr/local/cuda";

/// Vector register width assumed when none is given (hkt-cpu-codegen's
/// vector-bits); hkt-compile passes the target's own width.
inline constexpr int64_t kDefaultVectorBits = 512;

} // namespace mlir::hkt

#endif // HKT_PASSES_PIPELINEOPTIONS_H
