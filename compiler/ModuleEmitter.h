//===- ModuleEmitter.h - LLVM IR, the shared object, the files -*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The back half of hkt-compile: the LLVM dialect translated and optimised
// for the target machine with the packed entry points the runtime calls,
// the object linked into module.so, the module's files written beside the
// destination and swapped into place atomically.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_COMPILER_MODULEEMITTER_H
#define HKT_COMPILER_MODULEEMITTER_H

#include "compiler/ModuleCompiler.h"
#include "compiler/ModuleManifest.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>

namespace mlir::hkt::compiler {

/// The LLVM dialect -> optimised LLVM IR for the target machine, with the
/// packed entry points (and the device twins', which it marks in
/// `entries`), optimised at `optLevel` (LLVM's -O level).
FailureOr<std::unique_ptr<llvm::Module>>
translateAndOptimize(ModuleOp module, llvm::LLVMContext &llvmContext,
                     llvm::TargetMachine &tm, std::vector<EntrySpec> &entries,
                     unsigned optLevel = 3);

/// module.so and manifest.json in `tmpDir`, synced to disk.
LogicalResult
writeModuleFiles(Location loc, StringRef tmpDir, llvm::Module &llvmModule,
                 llvm::TargetMachine &tm, const CpuTarget &target,
                 const std::vector<EntrySpec> &entries,
                 const CompileOptions &options, const std::string &cudaArch,
                 const std::optional<DataParallelSpec> &dataParallel);

/// Moves the module in `tmpDir` to `outDir`, replacing an old module there.
/// Returns the directory that holds the old module afterwards ("" if none).
FailureOr<std::string> swapIntoPlace(Location loc, StringRef tmpDir,
                                     StringRef outDir);

/// Removes a temporary directory when the compile fails half way.
struct TempDirGuard {
  std::string path;
  ~TempDirGuard() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
};

} // namespace mlir::hkt::compiler

#endif // HKT_COMPILER_MODULEEMITTER_H
