//===- ModuleCompiler.cpp - MLIR module -> compiled-module dir ------------===//

#include "compiler/ModuleCompiler.h"
#include "compiler/Target.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::hkt;

namespace {
/// One argument or result of an entry, as the manifest describes it.
struct TensorSpec {
  std::string name;
  std::string dtype;
  SmallVector<int64_t> shape;
  std::optional<llvm::json::Value> defaultValue;
  std::optional<std::pair<int64_t, int64_t>> range;
};

struct EntrySpec {
  std::string name;
  std::vector<TensorSpec> args, results;
};

std::optional<std::string> dtypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF64())
    return "f64";
  if (type.isSignlessInteger(32))
    return "i32";
  if (type.isSignlessInteger(64))
    return "i64";
  return std::nullopt;
}

/// Reads a public function's signature into the manifest's terms; entries
/// take and return ranked tensors of static shape (dynamic sequence lengths
/// will be an addition to this, written as -1).
FailureOr<TensorSpec> describe(func::FuncOp fn, Type type, DictionaryAttr attrs,
                               StringRef kind, unsigned index) {
  TensorSpec spec;
  auto tensor = dyn_cast<RankedTensorType>(type);
  std::optional<std::string> dtype =
      tensor ? dtypeName(tensor.getElementType()) : std::nullopt;
  if (!tensor || !tensor.hasStaticShape() || !dtype)
    return fn.emitError() << "entry '" << fn.getSymName() << "': " << kind
                          << " #" << index << " has type " << type
                          << "; entries take and return ranked tensors of "
                             "static shape with f32, f64, i32 or i64 elements",
           failure();
  spec.dtype = *dtype;
  spec.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  spec.name = (Twine(kind == "argument" ? "arg" : "result") + Twine(index)).str();
  if (!attrs)
    return spec;
  if (auto name = attrs.getAs<StringAttr>(kNameAttr))
    spec.name = name.getValue().str();
  if (Attribute def = attrs.get(kDefaultAttr)) {
    if (auto i = dyn_cast<IntegerAttr>(def))
      spec.defaultValue = llvm::json::Value(i.getInt());
    else if (auto f = dyn_cast<FloatAttr>(def))
      spec.defaultValue = llvm::json::Value(f.getValueAsDouble());
    else
      return fn.emitError() << "entry '" << fn.getSymName() << "': "
                            << kDefaultAttr << " of " << kind << " '"
                            << spec.name << "' must be an integer or float",
             failure();
  }
  if (Attribute range = attrs.get(kRangeAttr)) {
    auto bounds = dyn_cast<DenseI64ArrayAttr>(range);
    if (!bounds || bounds.size() != 2 || bounds[0] > bounds[1] ||
        !tensor.getElementType().isInteger())
      return fn.emitError() << "entry '" << fn.getSymName() << "': "
                            << kRangeAttr << " of " << kind << " '"
                            << spec.name
                            << "' must be array<i64: lo, hi> with lo <= hi "
                               "on an integer tensor",
             failure();
    spec.range = {bounds[0], bounds[1]};
  }
  return spec;
}

FailureOr<std::vector<EntrySpec>> collectEntries(ModuleOp module) {
  std::vector<EntrySpec> entries;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn.isPublic() || fn.isExternal())
      continue;
    EntrySpec entry;
    entry.name = fn.getSymName().str();
    llvm::StringSet<> seen;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      FailureOr<TensorSpec> spec = describe(
          fn, fn.getArgumentTypes()[i], fn.getArgAttrDict(i), "argument", i);
      if (failed(spec))
        return failure();
      entry.args.push_back(*spec);
    }
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      FailureOr<TensorSpec> spec = describe(
          fn, fn.getResultTypes()[i], fn.getResultAttrDict(i), "result", i);
      if (failed(spec))
        return failure();
      entry.results.push_back(*spec);
    }
    for (const TensorSpec &spec : llvm::concat<TensorSpec>(entry.args,
                                                           entry.results))
      if (!seen.insert(spec.name).second)
        return fn.emitError() << "entry '" << entry.name << "': the name '"
                              << spec.name << "' is used twice",
               failure();
    // The manifest carries the hkt.* attributes from here on; LLVM does not
    // know them.
    auto strip = [](DictionaryAttr attrs) -> DictionaryAttr {
      if (!attrs)
        return attrs;
      SmallVector<NamedAttribute> kept;
      for (NamedAttribute attr : attrs)
        if (!attr.getName().getValue().starts_with("hkt."))
          kept.push_back(attr);
      return DictionaryAttr::get(attrs.getContext(), kept);
    };
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      fn.setArgAttrs(i, strip(fn.getArgAttrDict(i)));
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      fn.setResultAttrs(i, strip(fn.getResultAttrDict(i)));
    // The C interface (_mlir_ciface_<name>) is what the packed entry calls.
    fn->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                UnitAttr::get(module.getContext()));
    entries.push_back(std::move(entry));
  }
  if (entries.empty())
    return module.emitError("nothing to compile: the module has no public "
                            "function with a body"),
           failure();
  return entries;
}

/// Adds `void _hkt_packed_<name>(void **args)` for every entry: it unpacks
/// one descriptor pointer per argument and result and calls the C
/// interface, so a runtime can call any entry without knowing its arity.
LogicalResult addPackedEntries(llvm::Module &module,
                               ArrayRef<EntrySpec> entries, Location loc) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx);
  for (const EntrySpec &entry : entries) {
    llvm::Function *target =
        module.getFunction("_mlir_ciface_" + entry.name);
    size_t arity = entry.args.size() + entry.results.size();
    if (!target || target->arg_size() != arity)
      return emitError(loc) << "internal error: the lowered entry '"
                            << entry.name << "' does not take " << arity
                            << " memref descriptors";
    auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr},
                                         /*isVarArg=*/false);
    auto *packed = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                          "_hkt_packed_" + entry.name, module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", packed));
    SmallVector<llvm::Value *> callArgs;
    for (size_t i = 0; i < arity; ++i) {
      llvm::Value *slot = b.CreateConstGEP1_64(ptr, packed->getArg(0), i);
      callArgs.push_back(b.CreateLoad(ptr, slot));
    }
    b.CreateCall(target, callArgs);
    b.CreateRetVoid();
  }
  return success();
}

llvm::json::Value manifestJson(const CpuTarget &target,
                               ArrayRef<EntrySpec> entries) {
  auto tensors = [](ArrayRef<TensorSpec> specs) {
    llvm::json::Array out;
    for (const TensorSpec &spec : specs) {
      llvm::json::Object obj{{"name", spec.name},
                             {"dtype", spec.dtype},
                             {"shape", llvm::json::Array(spec.shape)}};
      if (spec.defaultValue)
        obj["default"] = *spec.defaultValue;
      if (spec.range)
        obj["range"] = llvm::json::Array{spec.range->first, spec.range->second};
      out.push_back(std::move(obj));
    }
    return out;
  };
  llvm::json::Array entryArray;
  for (const EntrySpec &entry : entries)
    entryArray.push_back(llvm::json::Object{
        {"name", entry.name},
        {"symbol", "_hkt_packed_" + entry.name},
        {"args", tensors(entry.args)},
        {"results", tensors(entry.results)}});
  return llvm::json::Object{
      {"format", "hkt-module"},
      {"version", 1},
      {"library", "module.so"},
      {"target", llvm::json::Object{{"triple", target.triple},
                                    {"cpu", target.cpu},
                                    {"features", llvm::json::Array(
                                                     target.features)}}},
      {"entries", std::move(entryArray)}};
}

/// Removes a temporary directory when the compile fails half way.
struct TempDirGuard {
  std::string path;
  ~TempDirGuard() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
};

LogicalResult linkSharedObject(Location loc, StringRef object,
                               StringRef output, bool openmp) {
  // Any system linker driver does; prefer the C compiler the build used.
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    cc = llvm::sys::findProgramByName("clang-22");
  if (!cc)
    return emitError(loc, "no linker driver found: install a C compiler "
                          "('cc' or 'clang-22') to link the shared object");
  SmallVector<StringRef> argv = {*cc, "-shared", "-o", output, object, "-lm"};
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

LogicalResult mlir::hkt::compileToDirectory(ModuleOp module,
                                            const CompileOptions &options,
                                            StringRef outDir) {
  Location loc = module.getLoc();
  if (options.pipeline != kReferencePipeline &&
      options.pipeline != kFusedPipeline)
    return emitError(loc) << "unknown pipeline '" << options.pipeline
                          << "' (available: " << kFusedPipeline << ", "
                          << kReferencePipeline << ")";
  if (options.tileQ < 0 || options.tileK < 0)
    return emitError(loc) << "tile sizes must be >= 1";

  llvm::Expected<CpuTarget> target = createCpuTarget(options.cpu);
  if (!target)
    return emitError(loc) << llvm::toString(target.takeError());

  // Refuse to clobber something that is not a compiled module.
  if (llvm::sys::fs::exists(outDir) &&
      !llvm::sys::fs::exists(outDir + "/manifest.json"))
    return emitError(loc) << "refusing to replace '" << outDir
                          << "': it exists and is not a compiled hkt module "
                             "(no manifest.json)";

  FailureOr<std::vector<EntrySpec>> entries = collectEntries(module);
  if (failed(entries))
    return failure();

  PassManager pm(module.getContext());
  if (options.pipeline == kFusedPipeline) {
    FusedPipelineOptions fused;
    auto has = [&](StringRef f) {
      return llvm::is_contained(target->features, f);
    };
    fused.vectorBits = has("avx512f") ? 512 : has("avx") ? 256 : 128;
    if (options.tileQ > 0)
      fused.tileQ = options.tileQ;
    if (options.tileK > 0)
      fused.tileK = options.tileK;
    buildHktCpuFusedPipeline(pm, fused);
  }
  else
    buildHktCpuReferencePipeline(pm);
  if (failed(pm.run(module)))
    return failure();

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "hkt_module");
  if (!llvmModule)
    return emitError(loc, "translation to LLVM IR failed");
  llvm::TargetMachine &tm = *target->machine;
  llvmModule->setDataLayout(tm.createDataLayout());
  llvmModule->setTargetTriple(tm.getTargetTriple());
  if (failed(addPackedEntries(*llvmModule, *entries, loc)))
    return failure();
  if (llvm::verifyModule(*llvmModule, &llvm::errs()))
    return emitError(loc, "internal error: invalid LLVM IR");
  if (llvm::Error err =
          makeOptimizingTransformer(/*optLevel=*/3, /*sizeLevel=*/0, &tm)(
              llvmModule.get()))
    return emitError(loc) << "LLVM optimisation failed: "
                          << llvm::toString(std::move(err));

  // Everything is written under a fresh directory beside the destination.
  SmallString<256> tmpDir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(
          outDir + ".tmp", tmpDir))
    return emitError(loc) << "cannot create a directory beside '" << outDir
                          << "': " << ec.message();
  TempDirGuard guard{tmpDir.str().str()};

  std::string objectPath = (tmpDir + "/module.o").str();
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPath, ec);
    if (ec)
      return emitError(loc) << "cannot write " << objectPath << ": "
                            << ec.message();
    llvm::legacy::PassManager codegen;
    if (tm.addPassesToEmitFile(codegen, os, nullptr,
                               llvm::CodeGenFileType::ObjectFile))
      return emitError(loc, "the target cannot emit object files");
    codegen.run(*llvmModule);
  }
  bool openmp = llvmModule->getFunction("__kmpc_fork_call") != nullptr;
  if (failed(linkSharedObject(loc, objectPath, (tmpDir + "/module.so").str(),
                              openmp)))
    return failure();
  llvm::sys::fs::remove(objectPath);

  {
    std::error_code ec;
    llvm::raw_fd_ostream os((tmpDir + "/manifest.json").str(), ec);
    if (ec)
      return emitError(loc) << "cannot write the manifest: " << ec.message();
    os << llvm::formatv("{0:2}", manifestJson(*target, *entries)) << "\n";
  }

  // Swap the new module in: move any old module aside first (rename cannot
  // replace a non-empty directory), then delete it.
  SmallString<256> old;
  if (llvm::sys::fs::exists(outDir)) {
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory(outDir + ".old", old))
      return emitError(loc) << "cannot replace '" << outDir
                            << "': " << ec.message();
    llvm::sys::fs::remove(old);
    if (std::error_code ec = llvm::sys::fs::rename(outDir, old))
      return emitError(loc) << "cannot replace '" << outDir
                            << "': " << ec.message();
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmpDir, outDir))
    return emitError(loc) << "cannot move the module into '" << outDir
                          << "': " << ec.message();
  guard.path.clear();
  if (!old.empty())
    llvm::sys::fs::remove_directories(old);
  return success();
}
