//===- Target.h - the CPU a module is compiled for --------------*- C++ -*-===//

#ifndef HKT_COMPILER_TARGET_H
#define HKT_COMPILER_TARGET_H

#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir::hkt {

/// The machine a module is compiled for, and what the manifest says of it.
struct CpuTarget {
  std::string triple;
  std::string cpu;
  /// LLVM names of the enabled CPU features, sorted (manifest `features`).
  std::vector<std::string> features;
  std::unique_ptr<llvm::TargetMachine> machine;
};

/// Creates the target machine for `cpu`: "native" means this machine's CPU
/// and every feature it has; any other name is an LLVM CPU name (`x86-64`
/// gives a portable module) with that CPU's default features.
llvm::Expected<CpuTarget> createCpuTarget(llvm::StringRef cpu);

} // namespace mlir::hkt

#endif // HKT_COMPILER_TARGET_H
