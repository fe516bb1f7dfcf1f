//===- ModuleCompiler.cpp - MLIR module -> compiled-module dir ------------===//

#include "compiler/ModuleCompiler.h"
#include "compiler/CudaBinary.h"
#include "compiler/Target.h"
#include "passes/Passes.h"
#include "runtime/Manifest.h"
#include "runtime/ModuleFormat.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <fcntl.h>
#include <stdio.h> // renameat2, RENAME_EXCHANGE (glibc, _GNU_SOURCE)
#include <unistd.h>

using namespace mlir;
using namespace mlir::hkt;

namespace {
namespace fmt = ::hkt::format;

/// A dynamic dimension of an argument: its symbol and bound.
struct DynamicDim {
  std::string symbol;
  int64_t max;
};

/// One argument or result of an entry, as the manifest describes it.
struct TensorSpec {
  std::string name;
  std::string role;
  std::string dtype;
  /// fmt::kDynamicDim for a dynamic dimension.
  SmallVector<int64_t> shape;
  /// Empty when the shape is static, else one per dimension.
  SmallVector<std::optional<DynamicDim>> dims;
  std::optional<llvm::json::Value> defaultValue;
  std::optional<std::pair<int64_t, int64_t>> range;
};

struct EntrySpec {
  std::string name;
  /// Every argument, in-out ones included; the results that stay results
  /// (in-out results are the new values of their arguments, not listed).
  std::vector<TensorSpec> args, results;
  /// For each result of the function, the in-out argument it updates.
  SmallVector<std::optional<unsigned>> resultInOut;
  /// Working memory (docs/module-format.md): bytes allocated once per call
  /// and per thread of a parallel region; unset if not bounded.
  std::optional<std::pair<uint64_t, uint64_t>> workingMemory;
};

/// Upper bound of the heap memory a function allocates during a call, from
/// its memref.alloc ops (after bufferization and deallocation): every
/// allocation counted as if all were live at once, its bytes plus its
/// alignment (what the lowering adds to the malloc); those inside an
/// omp.parallel region once per thread (.second), the others once (.first);
/// callees added at their call sites. Unset when an allocation has a dynamic
/// size or an element type of unknown size, when an allocation inside a loop
/// may outlive its iteration (the loop carries or returns a memref), or on
/// recursion.
/// fsync of a file or directory, best effort (the rename that follows is
/// what makes a module appear; this makes it survive a power loss).
void syncPath(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  (void)::fsync(fd);
  ::close(fd);
}

struct WorkingMemoryAnalysis {
  explicit WorkingMemoryAnalysis(ModuleOp module) : module(module) {}
  ModuleOp module;
  llvm::DenseMap<Operation *, std::optional<std::pair<uint64_t, uint64_t>>>
      cache;
  llvm::SmallPtrSet<Operation *, 8> active;

  static std::optional<uint64_t> elementBytes(Type t) {
    if (t.isIndex())
      return 8;
    if (t.isIntOrFloat())
      return (t.getIntOrFloatBitWidth() + 7) / 8;
    if (auto v = dyn_cast<VectorType>(t))
      if (v.hasStaticShape())
        if (std::optional<uint64_t> e = elementBytes(v.getElementType()))
          return *e * v.getNumElements();
    return std::nullopt;
  }

  static bool add(uint64_t &into, uint64_t v) {
    if (into > UINT64_MAX - v)
      return false;
    into += v;
    return true;
  }

  std::optional<std::pair<uint64_t, uint64_t>> analyse(func::FuncOp fn) {
    if (auto it = cache.find(fn); it != cache.end())
      return it->second;
    if (!active.insert(fn).second)
      return std::nullopt; // recursion
    std::optional<std::pair<uint64_t, uint64_t>> result =
        std::pair<uint64_t, uint64_t>{0, 0};
    auto perThread = [](Operation *op) {
      return op->getParentOfType<omp::ParallelOp>() != nullptr ||
             op->getParentOfType<scf::ParallelOp>() != nullptr ||
             op->getParentOfType<scf::ForallOp>() != nullptr;
    };
    auto escapesLoop = [&](Operation *op) {
      for (Operation *p = op->getParentOp(); p && p != fn; p = p->getParentOp())
        if (isa<LoopLikeOpInterface>(p) || isa<scf::WhileOp>(p))
          for (Type t : p->getResultTypes())
            if (isa<BaseMemRefType>(t))
              return true;
      return false;
    };
    fn.walk([&](Operation *op) {
      if (!result)
        return WalkResult::interrupt();
      uint64_t serial = 0, threaded = 0;
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        MemRefType type = alloc.getType();
        std::optional<uint64_t> e = elementBytes(type.getElementType());
        if (!type.hasStaticShape() || !e || escapesLoop(op)) {
          result.reset();
          return WalkResult::interrupt();
        }
        uint64_t bytes = *e;
        for (int64_t d : type.getShape())
          if (d != 0 && bytes > UINT64_MAX / static_cast<uint64_t>(d)) {
            result.reset();
            return WalkResult::interrupt();
          } else
            bytes *= static_cast<uint64_t>(d);
        if (std::optional<uint64_t> a = alloc.getAlignment())
          bytes += *a;
        (perThread(op) ? threaded : serial) = bytes;
      } else if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
        if (!callee || callee.isExternal())
          return WalkResult::advance();
        auto sub = analyse(callee);
        if (!sub || escapesLoop(op)) {
          result.reset();
          return WalkResult::interrupt();
        }
        if (perThread(op))
          threaded = sub->first + sub->second;
        else {
          serial = sub->first;
          threaded = sub->second;
        }
      } else {
        return WalkResult::advance();
      }
      if (!add(result->first, serial) || !add(result->second, threaded))
        result.reset();
      return WalkResult::advance();
    });
    active.erase(fn);
    cache[fn] = result;
    return result;
  }
};

/// Runs the working-memory analysis on the IR just before memrefs are
/// lowered to LLVM (after bufferization, deallocation, the codegen and the
/// conversion of parallel loops to OpenMP).
struct WorkingMemoryInstrumentation : PassInstrumentation {
  std::vector<EntrySpec> &entries;
  bool ran = false;
  explicit WorkingMemoryInstrumentation(std::vector<EntrySpec> &entries)
      : entries(entries) {}
  void runBeforePass(Pass *pass, Operation *op) override {
    if (ran || pass->getArgument() != "finalize-memref-to-llvm")
      return;
    auto module = dyn_cast<ModuleOp>(op);
    if (!module)
      return;
    ran = true;
    WorkingMemoryAnalysis analysis(module);
    for (EntrySpec &entry : entries)
      if (auto fn = module.lookupSymbol<func::FuncOp>(entry.name))
        entry.workingMemory = analysis.analyse(fn);
  }
};

std::optional<std::string> dtypeName(Type type) {
  if (type.isF32())
    return fmt::dtype::kF32;
  if (type.isF64())
    return fmt::dtype::kF64;
  if (type.isSignlessInteger(32))
    return fmt::dtype::kI32;
  if (type.isSignlessInteger(64))
    return fmt::dtype::kI64;
  return std::nullopt;
}

/// Reads one argument or result of a public function into the manifest's
/// terms. The hkt.* attributes have been checked by the hkt dialect's
/// verifier (dialect/HKTDialect.cpp); what is checked here is what an entry
/// needs beyond them.
FailureOr<TensorSpec> describe(func::FuncOp fn, Type type, DictionaryAttr attrs,
                               bool isArg, unsigned index) {
  StringRef kind = isArg ? "argument" : "result";
  auto emit = [&]() {
    return fn.emitError() << "entry '" << fn.getSymName() << "': ";
  };
  TensorSpec spec;
  auto tensor = dyn_cast<RankedTensorType>(type);
  std::optional<std::string> dtype =
      tensor ? dtypeName(tensor.getElementType()) : std::nullopt;
  if (!tensor || !dtype)
    return emit() << kind << " #" << index << " has type " << type
                  << "; entries take and return ranked tensors with f32, "
                     "f64, i32 or i64 elements (dynamic dimensions of "
                     "arguments bounded by '"
                  << fmt::attr::kBounds << "', of results named by '"
                  << fmt::attr::kDims << "')",
           failure();
  spec.dtype = *dtype;
  spec.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  spec.name = (Twine(isArg ? "arg" : "result") + Twine(index)).str();
  spec.role = isArg ? fmt::role::kInput : fmt::role::kOutput;
  if (attrs) {
    if (auto name = attrs.getAs<StringAttr>(fmt::attr::kName))
      spec.name = name.getValue().str();
    if (auto role = attrs.getAs<StringAttr>(fmt::attr::kRole))
      spec.role = role.getValue().str();
    if (Attribute def = attrs.get(fmt::attr::kDefault)) {
      if (auto i = dyn_cast<IntegerAttr>(def))
        spec.defaultValue = llvm::json::Value(i.getInt());
      else if (auto f = dyn_cast<FloatAttr>(def))
        spec.defaultValue = llvm::json::Value(f.getValueAsDouble());
    }
    if (auto range = attrs.getAs<DenseI64ArrayAttr>(fmt::attr::kRange))
      spec.range = {range[0], range[1]};
  }
  if (tensor.hasStaticShape())
    return spec;

  // Dynamic dimensions: the runtime checks each call's sizes against the
  // bounds; the symbols say which dimensions are the same size. A result's
  // come from the arguments (the dialect verified that each names an
  // argument's symbol), and so does its bound.
  if (!isArg) {
    auto symbols = attrs ? attrs.getAs<ArrayAttr>(fmt::attr::kDims) : nullptr;
    if (!symbols)
      return emit() << "result '" << spec.name << "' has type " << type
                    << ": name the argument symbols of its dynamic dimensions "
                       "with '"
                    << fmt::attr::kDims << "' (the caller allocates results)",
             failure();
    for (auto [d, size] : llvm::enumerate(tensor.getShape())) {
      if (!ShapedType::isDynamic(size)) {
        spec.dims.push_back(std::nullopt);
        continue;
      }
      spec.shape[d] = fmt::kDynamicDim;
      StringRef symbol = cast<StringAttr>(symbols[d]).getValue();
      std::optional<int64_t> bound;
      for (unsigned a = 0; a < fn.getNumArguments() && !bound; ++a) {
        auto argType = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[a]);
        auto argDims = fn.getArgAttrOfType<ArrayAttr>(a, fmt::attr::kDims);
        auto argBounds =
            fn.getArgAttrOfType<DenseI64ArrayAttr>(a, fmt::attr::kBounds);
        if (!argType || !argDims || !argBounds)
          continue;
        for (auto [ad, s] : llvm::enumerate(argDims))
          if (cast<StringAttr>(s).getValue() == symbol &&
              argType.isDynamicDim(ad))
            bound = argBounds[ad];
      }
      if (!bound)
        return emit() << "result '" << spec.name << "': no argument defines "
                      << "the symbol '" << symbol << "' of dimension " << d,
               failure();
      spec.dims.push_back(DynamicDim{symbol.str(), *bound});
    }
    return spec;
  }
  auto bounds =
      attrs ? attrs.getAs<DenseI64ArrayAttr>(fmt::attr::kBounds) : nullptr;
  if (!bounds)
    return emit() << "argument '" << spec.name << "' has type " << type
                  << ": give its dynamic dimensions a bound with '"
                  << fmt::attr::kBounds << "'",
           failure();
  auto symbols = attrs.getAs<ArrayAttr>(fmt::attr::kDims);
  for (auto [d, size] : llvm::enumerate(tensor.getShape())) {
    if (!ShapedType::isDynamic(size)) {
      spec.dims.push_back(std::nullopt);
      continue;
    }
    spec.shape[d] = fmt::kDynamicDim;
    std::string symbol = symbols ? cast<StringAttr>(symbols[d]).getValue().str()
                                 : (Twine(spec.name) + "." + Twine(d)).str();
    spec.dims.push_back(DynamicDim{symbol, bounds[d]});
  }
  return spec;
}

/// Prepares the in-out arguments of `fn` for bufferization. Each in-out
/// result's value is materialised in its argument's buffer, and the result
/// returns that (so the op stays live until bufferization):
///
///   func.func @f(%p: tensor<4xf32> {hkt.role = "inout"}, %g: ...)
///       -> (tensor<4xf32> {hkt.inout = 0 : i64}, ...) {
///     ...
///     return %new, ...
///
/// becomes
///
///   func.func @f(%p: tensor<4xf32> {bufferization.writable = true},
///                %g: ... {bufferization.writable = false}) -> (...) {
///     ...
///     %0 = bufferization.materialize_in_destination %new in %p
///     return %0, ...
///
/// One-shot bufferization then writes the new value into the caller's
/// buffer: in place where it can, through a copy where it cannot, and it
/// refuses IR that would need the old value after it is overwritten. Every
/// other argument is marked read-only, so that no input is ever written.
/// The in-out result itself becomes an out-parameter of the lowered
/// function, to which the packed entry passes the argument's own buffer
/// (addPackedEntries).
LogicalResult prepareArguments(func::FuncOp fn, const EntrySpec &entry) {
  MLIRContext *ctx = fn.getContext();
  StringRef writable = bufferization::BufferizationDialect::kWritableAttrName;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (isa<TensorType>(fn.getArgumentTypes()[i]))
      fn.setArgAttr(
          i, writable,
          BoolAttr::get(ctx, entry.args[i].role == fmt::role::kInOut));
  if (llvm::none_of(entry.resultInOut,
                    [](std::optional<unsigned> a) { return a.has_value(); }))
    return success();

  IRRewriter rewriter(ctx);
  SmallVector<func::ReturnOp> returns;
  for (Block &block : fn.getBody())
    if (auto ret = dyn_cast<func::ReturnOp>(block.getTerminator()))
      returns.push_back(ret);
  Block &entryBlock = fn.getBody().front();
  for (func::ReturnOp ret : returns) {
    // A returned in-out argument, other than as its own new value, is its
    // old value: copy it on entry, before anything can overwrite it.
    for (OpOperand &operand : ret->getOpOperands()) {
      auto arg = dyn_cast<BlockArgument>(operand.get());
      std::optional<unsigned> self =
          entry.resultInOut[operand.getOperandNumber()];
      if (!arg || arg.getOwner() != &entryBlock ||
          entry.args[arg.getArgNumber()].role != fmt::role::kInOut ||
          self == arg.getArgNumber())
        continue;
      rewriter.setInsertionPointToStart(&entryBlock);
      auto type = cast<RankedTensorType>(arg.getType());
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          sizes.push_back(
              tensor::DimOp::create(rewriter, arg.getLoc(), arg, d));
      operand.set(bufferization::AllocTensorOp::create(
          rewriter, arg.getLoc(), type, sizes, /*copy=*/arg));
    }
    rewriter.setInsertionPoint(ret);
    for (auto [i, argIndex] : llvm::enumerate(entry.resultInOut)) {
      if (!argIndex)
        continue;
      auto materialize = bufferization::MaterializeInDestinationOp::create(
          rewriter, ret.getLoc(), ret.getOperand(i), fn.getArgument(*argIndex));
      ret.setOperand(i, materialize.getResult());
    }
  }
  // Let the computations of the new values write straight into the
  // argument's buffer where they fill a tensor.empty (upstream empty-tensor
  // elimination). Only an optimisation: one-shot bufferization stays correct
  // without it.
  bufferization::OneShotBufferizationOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.allowUnknownOps = true;
  bufferization::OneShotAnalysisState state(fn, options);
  // Analysed alone, without its callees, a function that calls others may
  // look like it has conflicts the module-wide bufferization does not find:
  // then this optimisation is skipped, silently.
  ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
  if (succeeded(bufferization::analyzeOp(fn, state)))
    (void)bufferization::eliminateEmptyTensors(rewriter, fn, state);
  return success();
}

/// `attrs` without the hkt.* attributes, which the manifest carries from
/// here on (LLVM does not know them).
DictionaryAttr stripHktAttrs(DictionaryAttr attrs) {
  if (!attrs)
    return attrs;
  SmallVector<NamedAttribute> kept;
  for (NamedAttribute attr : attrs)
    if (!attr.getName().getValue().starts_with("hkt."))
      kept.push_back(attr);
  return DictionaryAttr::get(attrs.getContext(), kept);
}

FailureOr<std::vector<EntrySpec>> collectEntries(ModuleOp module) {
  std::vector<EntrySpec> entries;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn.isPublic() || fn.isExternal())
      continue;
    EntrySpec entry;
    entry.name = fn.getSymName().str();
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      auto inOut = fn.getResultAttrOfType<IntegerAttr>(i, fmt::attr::kInOut);
      entry.resultInOut.push_back(
          inOut ? std::optional<unsigned>(inOut.getInt()) : std::nullopt);
    }
    llvm::StringSet<> seen;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      FailureOr<TensorSpec> spec =
          describe(fn, fn.getArgumentTypes()[i], fn.getArgAttrDict(i),
                   /*isArg=*/true, i);
      if (failed(spec))
        return failure();
      entry.args.push_back(*spec);
    }
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      if (entry.resultInOut[i])
        continue;
      FailureOr<TensorSpec> spec =
          describe(fn, fn.getResultTypes()[i], fn.getResultAttrDict(i),
                   /*isArg=*/false, i);
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
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      fn.setArgAttrs(i, stripHktAttrs(fn.getArgAttrDict(i)));
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      fn.setResultAttrs(i, stripHktAttrs(fn.getResultAttrDict(i)));
    if (failed(prepareArguments(fn, entry)))
      return failure();
    // The C interface (_mlir_ciface_<name>) is what the packed entry calls.
    fn->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                UnitAttr::get(module.getContext()));
    entries.push_back(std::move(entry));
  }
  // The functions they call (the model's rows) carry hkt.* attributes too.
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isPublic())
      continue;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      fn.setArgAttrs(i, stripHktAttrs(fn.getArgAttrDict(i)));
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      fn.setResultAttrs(i, stripHktAttrs(fn.getResultAttrDict(i)));
  }
  if (entries.empty())
    return module.emitError("nothing to compile: the module has no public "
                            "function with a body"),
           failure();
  return entries;
}

/// Adds `void _hkt_packed_<name>(void **args)` for every entry: it unpacks
/// one descriptor pointer per manifest argument and result and calls the C
/// interface, so a runtime can call any entry without knowing its arity.
/// The lowered function takes the function's results as trailing
/// out-parameters; the one of an in-out result is given its argument's
/// descriptor, so the final copy of the new value into it (if the pipeline
/// left one) copies the buffer onto itself, which LLVM removes once the
/// entry is inlined here. Everything but the packed entries is then
/// internal to the module.
LogicalResult addPackedEntries(llvm::Module &module,
                               ArrayRef<EntrySpec> entries, Location loc) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx);
  for (const EntrySpec &entry : entries) {
    llvm::Function *target =
        module.getFunction("_mlir_ciface_" + entry.name);
    size_t numArgs = entry.args.size();
    size_t arity = numArgs + entry.resultInOut.size();
    // A pipeline that drops the in-out results after bufferization (they
    // return their argument's buffer) leaves only the manifest's results.
    bool inOutResultsDropped =
        target && target->arg_size() == numArgs + entry.results.size();
    if (!target || (target->arg_size() != arity && !inOutResultsDropped))
      return emitError(loc) << "internal error: the lowered entry '"
                            << entry.name << "' does not take " << arity
                            << " memref descriptors";
    auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr},
                                         /*isVarArg=*/false);
    auto *packed =
        llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                               fmt::kPackedSymbolPrefix + entry.name, module);
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
  }
  for (llvm::Function &f : module)
    if (!f.isDeclaration() &&
        !f.getName().starts_with(fmt::kPackedSymbolPrefix))
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  return success();
}

llvm::json::Value manifestJson(const CpuTarget &target,
                               ArrayRef<EntrySpec> entries,
                               StringRef modelConfig, StringRef cudaArch) {
  namespace key = fmt::key;
  auto tensors = [](ArrayRef<TensorSpec> specs) {
    llvm::json::Array out;
    for (const TensorSpec &spec : specs) {
      llvm::json::Object obj{{key::kName, spec.name},
                             {key::kRole, spec.role},
                             {key::kDType, spec.dtype},
                             {key::kShape, llvm::json::Array(spec.shape)}};
      if (!spec.dims.empty()) {
        llvm::json::Array dims;
        for (const std::optional<DynamicDim> &d : spec.dims)
          dims.push_back(
              d ? llvm::json::Value(llvm::json::Object{
                      {key::kDimSymbol, d->symbol}, {key::kDimMax, d->max}})
                : llvm::json::Value(nullptr));
        obj[key::kDims] = std::move(dims);
      }
      if (spec.defaultValue)
        obj[key::kDefault] = *spec.defaultValue;
      if (spec.range)
        obj[key::kRange] =
            llvm::json::Array{spec.range->first, spec.range->second};
      out.push_back(std::move(obj));
    }
    return out;
  };
  llvm::json::Array entryArray;
  for (const EntrySpec &entry : entries) {
    llvm::json::Object obj{
        {key::kName, entry.name},
        {key::kSymbol, fmt::kPackedSymbolPrefix + entry.name},
        {key::kArgs, tensors(entry.args)},
        {key::kResults, tensors(entry.results)}};
    if (entry.workingMemory) {
      obj[key::kWorkingMemory] = entry.workingMemory->first;
      obj[key::kWorkingMemoryPerThread] = entry.workingMemory->second;
    }
    entryArray.push_back(std::move(obj));
  }
  llvm::json::Object manifest{
      {key::kFormat, fmt::kFormatName},
      {key::kVersion, fmt::kVersion},
      {key::kLibrary, fmt::kLibraryFile},
      {key::kTarget, llvm::json::Object{{key::kKind, fmt::target_kind::kCpu},
                                        {key::kTriple, target.triple},
                                        {key::kCpu, target.cpu},
                                        {key::kFeatures,
                                         llvm::json::Array(target.features)}}},
      {key::kEntries, std::move(entryArray)}};
  if (!cudaArch.empty()) {
    llvm::json::Object &t = *manifest.getObject(key::kTarget);
    t[key::kKind] = fmt::target_kind::kCuda;
    t[key::kArch] = cudaArch.str();
  }
  if (!modelConfig.empty()) {
    if (llvm::Expected<llvm::json::Value> model =
            llvm::json::parse(modelConfig))
      manifest[key::kModel] = std::move(*model);
    else
      llvm::consumeError(model.takeError());
  }
  return manifest;
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

namespace {
/// The code-generation targets of hkt-compile --target.
enum class CodegenTarget { Cpu, Nvvm, GpuEmulation };

/// Checks the options once, before any work; returns the target and, for
/// nvvm, the chips to compile for (the defaults when none is given).
FailureOr<std::pair<CodegenTarget, std::vector<std::string>>>
validateOptions(Location loc, const CompileOptions &options) {
  std::optional<CodegenTarget> parsed =
      llvm::StringSwitch<std::optional<CodegenTarget>>(options.target)
          .Case("cpu", CodegenTarget::Cpu)
          .Case("nvvm", CodegenTarget::Nvvm)
          .Case("gpu-emulation", CodegenTarget::GpuEmulation)
          .Default(std::nullopt);
  if (options.pipeline != kReferencePipeline &&
      options.pipeline != kFusedPipeline)
    return emitError(loc) << "unknown pipeline '" << options.pipeline
                          << "' (available: " << kFusedPipeline << ", "
                          << kReferencePipeline << ")";
  if (options.tileQ < 0 || options.tileK < 0)
    return emitError(loc) << "tile sizes must be >= 1";
  if (!parsed)
    return emitError(loc) << "unknown target '" << options.target
                          << "' (available: cpu, nvvm, gpu-emulation)";
  bool nvvm = *parsed == CodegenTarget::Nvvm;
  bool emulation = *parsed == CodegenTarget::GpuEmulation;
  if (options.precision != "f32" && !nvvm && !emulation)
    return emitError(loc) << "--precision " << options.precision
                          << " applies to --target nvvm and gpu-emulation";
  if (options.precision != "f32" && options.precision != "tf32")
    return emitError(loc) << "unknown precision '" << options.precision
                          << "' (f32, or tf32 for the tensor cores; bf16 is "
                             "not built yet)";
  if (emulation && options.pipeline != kFusedPipeline)
    return emitError(loc) << "the gpu-emulation target has the NVVM path's "
                             "pipeline only";
  std::vector<std::string> chips = options.chips;
  if (nvvm) {
    if (options.pipeline != kFusedPipeline)
      return emitError(loc) << "the nvvm target has one pipeline (the fused "
                               "one); --pipeline "
                            << options.pipeline << " is for the CPU";
    if (chips.empty())
      for (StringRef chip : llvm::split(kDefaultGpuChips, ','))
        chips.push_back(chip.str());
    for (const std::string &chip : chips) {
      // The runtime's reading of the name; ptxas of CUDA 13 knows sm_75
      // and later (RECIPE P2).
      std::optional<::hkt::runtime::CudaArch> arch =
          ::hkt::runtime::parseCudaArch(chip);
      if (!arch || arch->major * 10 + arch->minor < 75)
        return emitError(loc) << "unknown GPU chip '" << chip
                              << "' (expected sm_75 or later, e.g. sm_80, "
                                 "sm_90, sm_90a)";
    }
    if (failed(checkCudaToolkit(loc, options.cudaPath)))
      return failure();
  }

  return std::make_pair(*parsed, std::move(chips));
}

/// The named pipeline of the target and options, into `pm`.
void buildPipeline(PassManager &pm, CodegenTarget target, const CpuTarget &cpu,
                   const CompileOptions &options,
                   const std::vector<std::string> &chips) {
  if (target != CodegenTarget::Cpu) {
    NvvmPipelineOptions gpu;
    if (options.tileQ > 0)
      gpu.tileQ = options.tileQ;
    if (options.tileK > 0)
      gpu.tileK = options.tileK;
    gpu.precision = options.precision;
    gpu.chips = chips;
    gpu.cudaPath = options.cudaPath;
    if (target == CodegenTarget::Nvvm)
      buildHktNvvmPipeline(pm, gpu);
    else
      buildHktGpuEmulationPipeline(pm, gpu);
  } else if (options.pipeline == kFusedPipeline) {
    FusedPipelineOptions fused;
    auto has = [&](StringRef f) { return llvm::is_contained(cpu.features, f); };
    fused.vectorBits = has("avx512f") ? 512 : has("avx") ? 256 : 128;
    if (options.tileQ > 0)
      fused.tileQ = options.tileQ;
    if (options.tileK > 0)
      fused.tileK = options.tileK;
    buildHktCpuFusedPipeline(pm, fused);
  } else {
    buildHktCpuReferencePipeline(pm);
  }
}

/// Runs the pipeline; a CPU module's entries get their working memory.
LogicalResult lowerToLLVMDialect(ModuleOp module, CodegenTarget target,
                                 const CpuTarget &cpu,
                                 const CompileOptions &options,
                                 const std::vector<std::string> &chips,
                                 std::vector<EntrySpec> &entries) {
  Location loc = module.getLoc();
  PassManager pm(module.getContext());
  buildPipeline(pm, target, cpu, options, chips);
  // The working memory of a cuda module is device memory: not measured
  // (nor that of its emulation).
  WorkingMemoryInstrumentation *memory = nullptr;
  if (target == CodegenTarget::Cpu) {
    auto instrumentation =
        std::make_unique<WorkingMemoryInstrumentation>(entries);
    memory = instrumentation.get();
    pm.addInstrumentation(std::move(instrumentation));
  }
  if (failed(pm.run(module)))
    return failure();
  if (memory && !memory->ran)
    return emitError(loc, "internal error: the pipeline has no "
                          "finalize-memref-to-llvm pass, before which the "
                          "working memory is computed");
  return success();
}

/// The nvvm target: the kernels' fatbins, and --kernel-report's lines.
LogicalResult assembleKernels(ModuleOp module, const CompileOptions &options) {
  std::vector<KernelReport> reports;
  if (failed(assembleCudaBinaries(module, options.cudaPath, reports)))
    return failure();
  if (options.kernelReport)
    for (const KernelReport &r : reports)
      *options.kernelReport
          << llvm::formatv("kernel {0} {1}: {2} registers, {3} bytes stack, "
                           "{4} bytes spill stores, {5} bytes spill loads, "
                           "{6} bytes smem\n",
                           r.kernel, r.chip, r.registers, r.stackBytes,
                           r.spillStores, r.spillLoads, r.sharedBytes);
  return success();
}

/// The LLVM dialect -> optimised LLVM IR for the target machine, with the
/// packed entry points.
FailureOr<std::unique_ptr<llvm::Module>>
translateAndOptimize(ModuleOp module, llvm::LLVMContext &llvmContext,
                     llvm::TargetMachine &tm,
                     const std::vector<EntrySpec> &entries) {
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
  if (llvm::Error err = makeOptimizingTransformer(
          /*optLevel=*/3, /*sizeLevel=*/0, &tm)(llvmModule.get()))
    return emitError(loc) << "LLVM optimisation failed: "
                          << llvm::toString(std::move(err));
  return llvmModule;
}

/// module.so and manifest.json in `tmpDir`, synced to disk.
LogicalResult writeModuleFiles(Location loc, StringRef tmpDir,
                               llvm::Module &llvmModule,
                               llvm::TargetMachine &tm, const CpuTarget &target,
                               const std::vector<EntrySpec> &entries,
                               const CompileOptions &options,
                               const std::string &cudaArch) {
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
    os << llvm::formatv("{0:2}", manifestJson(target, entries,
                                              options.modelConfig, cudaArch))
       << "\n";
  }

  // The module's files reach the disk before it is renamed into place.
  for (const char *file : {fmt::kLibraryFile, fmt::kManifestFile})
    syncPath((tmpDir + "/" + file).str());
  syncPath(tmpDir.str());

  return success();
}

/// Moves the module in `tmpDir` to `outDir`, replacing an old module there.
/// Returns the directory that holds the old module afterwards ("" if none).
FailureOr<std::string> swapIntoPlace(Location loc, StringRef tmpDir,
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
} // namespace

LogicalResult mlir::hkt::compileToDirectory(ModuleOp module,
                                            const CompileOptions &options,
                                            StringRef outDir) {
  Location loc = module.getLoc();
  auto validated = validateOptions(loc, options);
  if (failed(validated))
    return failure();
  auto [targetKind, chips] = *validated;
  llvm::Expected<CpuTarget> target = createCpuTarget(options.cpu);
  if (!target)
    return emitError(loc) << llvm::toString(target.takeError());

  // Refuse to clobber something that is not a compiled module.
  if (llvm::sys::fs::exists(outDir) &&
      !llvm::sys::fs::exists(outDir + "/" + fmt::kManifestFile))
    return emitError(loc) << "refusing to replace '" << outDir
                          << "': it exists and is not a compiled hkt module "
                             "(no manifest.json)";

  FailureOr<std::vector<EntrySpec>> entries = collectEntries(module);
  if (failed(entries) || failed(lowerToLLVMDialect(module, targetKind, *target,
                                                   options, chips, *entries)))
    return failure();
  std::string cudaArch;
  if (targetKind == CodegenTarget::Nvvm) {
    if (options.emitPTX) {
      printPtx(module, *options.emitPTX);
      return success();
    }
    if (failed(assembleKernels(module, options)))
      return failure();
    cudaArch = llvm::join(chips, ",");
  }

  llvm::LLVMContext llvmContext;
  llvm::TargetMachine &tm = *target->machine;
  FailureOr<std::unique_ptr<llvm::Module>> llvmModule =
      translateAndOptimize(module, llvmContext, tm, *entries);
  if (failed(llvmModule))
    return failure();
  if (options.emitLLVM) {
    (*llvmModule)->print(*options.emitLLVM, nullptr);
    return success();
  }

  // Everything is written under a fresh directory beside the destination.
  SmallString<256> tmpDir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory(outDir + ".tmp", tmpDir))
    return emitError(loc) << "cannot create a directory beside '" << outDir
                          << "': " << ec.message();
  TempDirGuard guard{tmpDir.str().str()};
  if (failed(writeModuleFiles(loc, tmpDir, **llvmModule, tm, *target, *entries,
                              options, cudaArch)))
    return failure();
  FailureOr<std::string> old = swapIntoPlace(loc, tmpDir, outDir);
  if (failed(old))
    return failure();
  guard.path.clear();
  if (!old->empty())
    llvm::sys::fs::remove_directories(*old);
  return success();
}
