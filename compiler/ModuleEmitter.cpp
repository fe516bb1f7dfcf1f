//===- ModuleEmitter.cpp - LLVM IR, the shared object, the files ---------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleEmitter.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <fcntl.h>
#include <stdio.h> // renameat2, RENAME_EXCHANGE (glibc, _GNU_SOURCE)
#include <unistd.h>

using namespace mlir;
using namespace mlir::hkt;
using namespace mlir::hkt::compiler;

namespace {

/// fsync of a file or directory, best effort (the rename that follows is
/// what makes a module appear; this makes it survive a power loss).
void syncPath(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  (void)::fsync(fd);
  ::close(fd);
}

/// Adds `void <symbol>(void **args)`, which calls the C interface `target`
/// of `entry`: it unpacks one descriptor pointer per manifest argument and
/// result, so a runtime can call any entry without knowing its arity.
/// The lowered function takes the function's results as trailing
/// out-parameters; the one of an in-out result is given its argument's
/// descriptor, so the final copy of the new value into it (if the pipeline
/// left one) copies the buffer onto itself, which LLVM removes once the
/// entry is inlined here.
LogicalResult addPackedEntry(llvm::Module &module, const EntrySpec &entry,
                             llvm::Function *target, const std::string &symbol,
                             Location loc) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx);
  size_t numArgs = entry.args.size();
  size_t arity = numArgs + entry.resultInOut.size();
  // A pipeline that drops the in-out results after bufferization (they
  // return their argument's buffer) leaves only the manifest's results.
  bool inOutResultsDropped =
      target && target->arg_size() == numArgs + entry.results.size();
  if (!target || (target->arg_size() != arity && !inOutResultsDropped))
    return emitError(loc) << "internal error: the lowered entry '" << entry.name
                          << "' does not take " << arity
                          << " memref descriptors";
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr},
                                       /*isVarArg=*/false);
  auto *packed = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                        symbol, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", packed));
  auto load = [&](size_t slot) -> llvm::Value * {
    return b.CreateLoad(ptr,
                        b.CreateConstGEP1_64(ptr, packed->getArg(0), slot));
  };
  SmallVector<llvm::Value *> callArgs;
  for (size_t i = 0; i < numArgs; ++i)
    callArgs.push_back(load(i));
  size_t nextResult = numArgs;
  for (std::optional<unsigned> argIndex : entry.resultInOut) {
    if (!argIndex)
      callArgs.push_back(load(nextResult++));
    else if (!inOutResultsDropped)
      callArgs.push_back(callArgs[*argIndex]);
  }
  b.CreateCall(target, callArgs);
  b.CreateRetVoid();
  return success();
}

/// The packed entries, and for a GPU module's entries the packed device
/// twins (`_hkt_packed_device_<name>`, which hkt-nvvm-host-staging made as
/// `<name>_on_device`: the same arguments, in device memory). Everything
/// else is then internal to the module.
LogicalResult addPackedEntries(llvm::Module &module,
                               MutableArrayRef<EntrySpec> entries,
                               Location loc) {
  for (EntrySpec &entry : entries) {
    if (failed(addPackedEntry(module, entry,
                              module.getFunction("_mlir_ciface_" + entry.name),
                              fmt::kPackedSymbolPrefix + entry.name, loc)))
      return failure();
    if (llvm::Function *twin = module.getFunction("_mlir_ciface_" + entry.name +
                                                  fmt::kDeviceTwinSuffix)) {
      if (failed(addPackedEntry(module, entry, twin,
                                fmt::kDevicePackedSymbolPrefix + entry.name,
                                loc)))
        return failure();
      entry.deviceTwin = true;
    }
  }
  for (llvm::Function &f : module)
    if (!f.isDeclaration() &&
        !f.getName().starts_with(fmt::kPackedSymbolPrefix))
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  return success();
}

LogicalResult linkSharedObject(Location loc, StringRef object, StringRef output,
                               bool openmp) {
  // Any system linker driver does; prefer the C compiler the build used.
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    cc = llvm::sys::findProgramByName("clang-22");
  if (!cc)
    return emitError(loc, "no linker driver found: install a C compiler "
                          "('cc' or 'clang-22') to link the shared object");
  // LLVM's builtins after the object: what its code generation calls and
  // the system's libgcc lacks (the bf16 conversions), linked in statically.
  SmallVector<StringRef> argv = {
      *cc, "-shared", "-o", output, object, HKT_COMPILER_RT_BUILTINS, "-lm"};
  // The module finds libomp where this compiler found it.
  std::string rpath =
      ("-Wl,-rpath," + llvm::sys::path::parent_path(HKT_OPENMP_LIBRARY)).str();
  if (openmp) {
    argv.push_back(HKT_OPENMP_LIBRARY);
    argv.push_back(rpath);
  }
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(*cc, argv, std::nullopt, {}, 0, 0, &error);
  if (rc != 0)
    return emitError(loc) << "linking " << output << " with " << *cc
                          << " failed (exit " << rc << ") " << error;
  return success();
}

} // namespace

FailureOr<std::unique_ptr<llvm::Module>>
mlir::hkt::compiler::translateAndOptimize(ModuleOp module,
                                          llvm::LLVMContext &llvmContext,
                                          llvm::TargetMachine &tm,
                                          std::vector<EntrySpec> &entries,
                                          unsigned optLevel) {
  Location loc = module.getLoc();
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "hkt_module");
  if (!llvmModule)
    return emitError(loc, "translation to LLVM IR failed");
  llvmModule->setDataLayout(tm.createDataLayout());
  llvmModule->setTargetTriple(tm.getTargetTriple());
  if (failed(addPackedEntries(*llvmModule, entries, loc)))
    return failure();
  if (llvm::verifyModule(*llvmModule, &llvm::errs()))
    return emitError(loc, "internal error: invalid LLVM IR");
  if (llvm::Error err = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0,
                                                  &tm)(llvmModule.get()))
    return emitError(loc) << "LLVM optimisation failed: "
                          << llvm::toString(std::move(err));
  return llvmModule;
}

LogicalResult mlir::hkt::compiler::writeModuleFiles(
    Location loc, StringRef tmpDir, llvm::Module &llvmModule,
    llvm::TargetMachine &tm, const CpuTarget &target,
    const std::vector<EntrySpec> &entries, const CompileOptions &options,
    const std::string &cudaArch,
    const std::optional<DataParallelSpec> &dataParallel) {
  std::string objectPath = (tmpDir + "/module.o").str();
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPath, ec);
    if (ec)
      return emitError(loc)
             << "cannot write " << objectPath << ": " << ec.message();
    llvm::legacy::PassManager codegen;
    if (tm.addPassesToEmitFile(codegen, os, nullptr,
                               llvm::CodeGenFileType::ObjectFile))
      return emitError(loc, "the target cannot emit object files");
    codegen.run(llvmModule);
  }
  bool openmp = llvmModule.getFunction("__kmpc_fork_call") != nullptr;
  if (failed(linkSharedObject(
          loc, objectPath, (tmpDir + "/" + fmt::kLibraryFile).str(), openmp)))
    return failure();
  llvm::sys::fs::remove(objectPath);

  {
    std::error_code ec;
    llvm::raw_fd_ostream os((tmpDir + "/" + fmt::kManifestFile).str(), ec);
    if (ec)
      return emitError(loc) << "cannot write the manifest: " << ec.message();
    os << llvm::formatv("{0:2}",
                        manifestJson(target, entries, options.modelConfig,
                                     cudaArch, dataParallel))
       << "\n";
  }

  // The module's files reach the disk before it is renamed into place.
  for (const char *file : {fmt::kLibraryFile, fmt::kManifestFile})
    syncPath((tmpDir + "/" + file).str());
  syncPath(tmpDir.str());

  return success();
}

FailureOr<std::string> mlir::hkt::compiler::swapIntoPlace(Location loc,
                                                          StringRef tmpDir,
                                                          StringRef outDir) {
  // Swap the new module in. Over an old module: one atomic exchange of the
  // two directories (renameat2 RENAME_EXCHANGE), so that OUT is always a
  // whole module, old or new; where the file system cannot exchange, the
  // old module is moved aside first (rename cannot replace a non-empty
  // directory) and moved back if the new one cannot be put in place.
  SmallString<256> old;
  if (llvm::sys::fs::exists(outDir)) {
    std::string tmp = tmpDir.str();
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, outDir.str().c_str(),
                    RENAME_EXCHANGE) == 0) {
      old = tmpDir; // now holds the old module
    } else {
      if (std::error_code ec =
              llvm::sys::fs::createUniqueDirectory(outDir + ".old", old))
        return emitError(loc)
               << "cannot replace '" << outDir << "': " << ec.message();
      llvm::sys::fs::remove(old);
      if (std::error_code ec = llvm::sys::fs::rename(outDir, old))
        return emitError(loc)
               << "cannot replace '" << outDir << "': " << ec.message();
      if (std::error_code ec = llvm::sys::fs::rename(tmpDir, outDir)) {
        (void)llvm::sys::fs::rename(old, outDir);
        return emitError(loc) << "cannot move the module into '" << outDir
                              << "': " << ec.message();
      }
    }
  } else if (std::error_code ec = llvm::sys::fs::rename(tmpDir, outDir)) {
    return emitError(loc) << "cannot move the module into '" << outDir
                          << "': " << ec.message();
  }
  StringRef parent = llvm::sys::path::parent_path(outDir);
  syncPath(parent.empty() ? std::string(".") : parent.str());
  return old.str().str();
}
