//===- Tuning.h - hkt-compile --tune: tiles measured on this host -*- C++ -*-===//
//
// The fused CPU pipeline's register tile chosen by timing: every candidate
// of the tuning table for the target's vector width
// (passes/codegen/cpu/CpuTuning.h) compiled from the module itself and
// timed with hkt-run on random inputs, the fastest kept. The choice is
// cached per CPU model and module (a JSON file), so that compiling the same
// module again on the same kind of machine times nothing.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_COMPILER_TUNING_H
#define HKT_COMPILER_TUNING_H

#include "compiler/ModuleCompiler.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::hkt {

struct TuneOptions {
  /// The hkt-run that times the candidates.
  std::string hktRun;
  /// The cache file (created if absent).
  std::string cachePath;
  /// Timed calls per candidate and round; rounds visit the candidates in
  /// turn (interleaved, so that a noisy neighbour hits all of them).
  int calls = 3, rounds = 3;
  /// Progress lines (one per candidate, the choice); may be null.
  llvm::raw_ostream *log = nullptr;
};

/// The cache file of `hkt-compile --tune` when none is given:
/// $HKT_TUNE_CACHE, else $XDG_CACHE_HOME/hkt/tune-cache.json, else
/// ~/.cache/hkt/tune-cache.json.
std::string defaultTuneCachePath();

/// Compiles `module` into `outDir` as compileToDirectory does, with the
/// register tile taken from the cache or measured on this host. Only for
/// the fused pipeline on the cpu target, without a register tile in
/// `options`.
LogicalResult tuneAndCompile(ModuleOp module, CompileOptions options,
                             StringRef outDir, const TuneOptions &tune);

} // namespace mlir::hkt

#endif // HKT_COMPILER_TUNING_H
