//===- ModuleCompiler.h - MLIR module -> compiled-module dir ----*- C++ -*-===//
//
// Ahead-of-time compilation of every public function of an MLIR module into
// the directory format of docs/module-format.md (module.so + manifest.json).
// The function argument and result attributes the manifest is made from
// (hkt.name, hkt.role, hkt.inout, ...) are named in runtime/ModuleFormat.h.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_COMPILER_MODULECOMPILER_H
#define HKT_COMPILER_MODULECOMPILER_H

#include "compiler/Target.h"
#include "passes/PipelineOptions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace mlir::hkt {

struct CompileOptions {
  /// "native" (this machine) or an LLVM CPU name such as "x86-64".
  std::string cpu = "native";
  /// LLVM features added or removed on top of the CPU's ("+f,-g", llc's
  /// -mattr); empty for none.
  std::string cpuFeatures;
  /// A registered pipeline name without the `hkt-cpu-` prefix and
  /// `-pipeline` suffix: "fused" (the default) or "reference".
  std::string pipeline = kFusedPipeline.str();
  /// Attention tile sizes of the fused pipeline
  /// (hkt-cpu-lower-online-attention's tile-q / tile-k); 0 keeps the pass
  /// defaults.
  int64_t tileQ = 0, tileK = 0;
  /// The fused pipeline's matmul register tile: rows, and columns in
  /// vectors (hkt-cpu-codegen's register-rows / register-vectors); 0 keeps
  /// the tuning table's entry for the target's vector width.
  int64_t registerRows = 0, registerVectors = 0;
  /// How that register tile was chosen, for the manifest's tiles.source
  /// (set by tuneAndCompile, Tuning.h: "tuned" or "tune-cache"); empty:
  /// "options" where the tile is given, else "table".
  std::string tilesSource;
  /// tuneAndCompile's measurements, for the manifest's tiles.tuning.
  std::vector<CpuTiles::Timing> tileTimings;
  /// When set, the optimised LLVM IR is printed here instead of writing a
  /// module (hkt-compile --emit-llvm); the output directory is not used.
  llvm::raw_ostream *emitLLVM = nullptr;
  /// "cpu" (host code only), "nvvm" (GPU kernels for NVIDIA GPUs through
  /// hkt-nvvm-pipeline, host code for `cpu`; a module of target kind cuda)
  /// or "gpu-emulation" (the NVVM path's kernels on this CPU, one OpenMP
  /// thread per GPU thread: a cpu module, for testing without a GPU).
  std::string target = "cpu";
  /// nvvm: the GPU architectures, one fatbin ("sm_80", "sm_90"; empty: both).
  std::vector<std::string> chips;
  /// nvvm / gpu-emulation: "f32" or "tf32" (tensor cores) for the attention.
  std::string precision = "f32";
  /// gpu-emulation: every memref access checked at run time (an access out
  /// of bounds aborts with the op's location).
  bool checkBounds = false;
  /// nvvm: the CUDA toolkit (ptxas, fatbinary, libdevice).
  std::string cudaPath = kDefaultCudaPath.str();
  /// nvvm: print the PTX of every kernel here instead of writing a module.
  llvm::raw_ostream *emitPTX = nullptr;
  /// nvvm: ptxas's registers / spills / shared memory per kernel and chip,
  /// one line each.
  llvm::raw_ostream *kernelReport = nullptr;
  /// A model's config (a JSON object), written to the manifest as "model"
  /// (docs/module-format.md); empty for other modules.
  std::string modelConfig;
};

/// The fused CPU pipeline's tiles for `cpu`: the options', else the
/// defaults and the tuning table's entry for the vector width.
CpuTiles resolveCpuTiles(const CpuTarget &cpu, const CompileOptions &options);

/// Compiles `module` (consumed: it is lowered in place) into the directory
/// `outDir`. Diagnostics go to the context's handler; on failure nothing is
/// left at `outDir` (an existing module there is replaced only on success).
LogicalResult compileToDirectory(ModuleOp module, const CompileOptions &options,
                                 StringRef outDir);

} // namespace mlir::hkt

#endif // HKT_COMPILER_MODULECOMPILER_H
