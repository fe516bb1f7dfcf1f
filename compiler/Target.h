//===- Target.h - the CPU a module is compiled for --------------*- C++ -*-===//

#ifndef HKT_COMPILER_TARGET_H
#define HKT_COMPILER_TARGET_H

#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::hkt {

/// The tiles the fused CPU pipeline uses for a target (the manifest's
/// `tiles`): the attention's query/key tiles and the matmuls' register tile,
/// from the options where given, else the defaults and the register tile of
/// the CPU's microarchitecture family (passes/codegen/cpu/CpuTuning.h).
struct CpuTiles {
  int64_t tileQ = 0, tileK = 0;
  int64_t vectorBits = 0;
  /// The microarchitecture family whose defaults apply (CpuFamily::name).
  std::string family;
  int64_t registerRows = 0, registerVectors = 0;
  /// "table", "options", "tuned" or "tune-cache".
  std::string source;
  /// hkt-compile --tune's timing of each candidate register tile.
  struct Timing {
    int64_t rows, vectors;
    /// The fastest call, in milliseconds.
    double minMs;
  };
  std::vector<Timing> timings;
};

/// The machine a module is compiled for, and what the manifest says of it.
struct CpuTarget {
  std::string triple;
  std::string cpu;
  /// LLVM names of the enabled CPU features, sorted (manifest `features`).
  std::vector<std::string> features;
  /// hkt-compile --cpu-features as given (empty without it).
  std::string extraFeatures;
  /// The matmuls' arithmetic where it is not f32: "bf16" (the manifest's
  /// `target.precision`): AMX tiles where `features` has amx-tile (the
  /// runtime then asks the kernel for the AMX state), else AVX512-BF16.
  std::string precision;
  std::unique_ptr<llvm::TargetMachine> machine;
  /// The fused CPU pipeline's tiles (unset on the other pipelines and
  /// targets); compileToDirectory resolves them.
  std::optional<CpuTiles> tiles;
};

/// Whether --precision bf16's matmuls run on AMX tiles for `target` (it has
/// amx-tile and amx-bf16), rather than on AVX512-BF16's dot products: the
/// runtime's rule (amxBf16Among), which reads the choice back from the
/// manifest's features.
bool usesAmx(const CpuTarget &target);

/// Creates the target machine for `cpu`: "native" means this machine's CPU
/// and every feature it has; any other name is an LLVM CPU name (`x86-64`
/// gives a portable module) with that CPU's default features.
/// `extraFeatures` ("+f,-g", llc's -mattr) adds or removes features on top.
llvm::Expected<CpuTarget> createCpuTarget(llvm::StringRef cpu,
                                          llvm::StringRef extraFeatures = "");

} // namespace mlir::hkt

#endif // HKT_COMPILER_TARGET_H
