//===- ModuleManifest.cpp - The entries of a module and its manifest ------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleManifest.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::hkt;
using namespace mlir::hkt::compiler;

namespace {

/// Upper bound of the heap memory a function allocates during a call, from
/// its memref.alloc and memref.dealloc ops (after bufferization and
/// deallocation): an allocation counts from its alloc to its dealloc in the
/// same block (to the end of the function without one), its bytes plus its
/// alignment (what the lowering adds to the malloc); the bound is the most
/// that is live at once, those inside an omp.parallel region once per
/// thread (.second), the others once (.first), each the most of its own
/// (so their sum bounds any mix); callees added at their call sites. Unset
/// when an allocation has a dynamic size or an element type of unknown
/// size, when an allocation inside a loop may outlive its iteration (the
/// loop carries or returns a memref), or on recursion.
struct WorkingMemoryAnalysis {
  explicit WorkingMemoryAnalysis(ModuleOp module) : module(module) {}
  ModuleOp module;
  /// Bytes (serial, per thread).
  using Bytes = std::pair<uint64_t, uint64_t>;
  /// A function's or a block's most live at once, and what is still live
  /// when it ends (allocations it does not free).
  struct Usage {
    Bytes peak{0, 0}, end{0, 0};
  };
  llvm::DenseMap<Operation *, std::optional<Usage>> cache;
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

  static bool add(Bytes &into, const Bytes &v) {
    if (into.first > UINT64_MAX - v.first ||
        into.second > UINT64_MAX - v.second)
      return false;
    into.first += v.first;
    into.second += v.second;
    return true;
  }
  static void raise(Bytes &into, const Bytes &v) {
    into.first = std::max(into.first, v.first);
    into.second = std::max(into.second, v.second);
  }

  static bool perThread(Operation *op) {
    return op->getParentOfType<omp::ParallelOp>() != nullptr ||
           op->getParentOfType<scf::ParallelOp>() != nullptr ||
           op->getParentOfType<scf::ForallOp>() != nullptr;
  }
  static bool escapesLoop(Operation *op, Operation *fn) {
    for (Operation *p = op->getParentOp(); p && p != fn; p = p->getParentOp())
      if (isa<LoopLikeOpInterface>(p) || isa<scf::WhileOp>(p))
        for (Type t : p->getResultTypes())
          if (isa<BaseMemRefType>(t))
            return true;
    return false;
  }

  /// The bytes of `alloc`, or none.
  static std::optional<uint64_t> allocBytes(memref::AllocOp alloc) {
    MemRefType type = alloc.getType();
    std::optional<uint64_t> e = elementBytes(type.getElementType());
    if (!type.hasStaticShape() || !e)
      return std::nullopt;
    uint64_t bytes = *e;
    for (int64_t d : type.getShape())
      if (d != 0 && bytes > UINT64_MAX / static_cast<uint64_t>(d))
        return std::nullopt;
      else
        bytes *= static_cast<uint64_t>(d);
    if (std::optional<uint64_t> a = alloc.getAlignment())
      bytes += *a;
    return bytes;
  }

  std::optional<Usage> analyse(Block &block, Operation *fn) {
    Usage usage;
    Bytes live{0, 0};
    llvm::DenseMap<Value, Bytes> own;
    for (Operation &op : block) {
      Bytes during{0, 0}, after{0, 0};
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        std::optional<uint64_t> bytes = allocBytes(alloc);
        if (!bytes || escapesLoop(&op, fn))
          return std::nullopt;
        Bytes b = perThread(&op) ? Bytes{0, *bytes} : Bytes{*bytes, 0};
        own[alloc.getResult()] = b;
        after = b;
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        if (auto it = own.find(dealloc.getMemref()); it != own.end()) {
          live.first -= it->second.first;
          live.second -= it->second.second;
          own.erase(it);
        }
      } else if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
        if (callee && !callee.isExternal()) {
          std::optional<Usage> sub = analyse(callee);
          if (!sub || escapesLoop(&op, fn))
            return std::nullopt;
          // A call inside a parallel region runs once per thread.
          auto threads = [&](Bytes b) {
            return perThread(&op) ? Bytes{0, b.first + b.second} : b;
          };
          during = threads(sub->peak);
          after = threads(sub->end);
        }
      } else {
        // One region runs at a time (a loop's iterations each free what
        // they allocate; see escapesLoop).
        for (Region &region : op.getRegions()) {
          std::optional<Usage> sub = analyse(region, fn);
          if (!sub)
            return std::nullopt;
          raise(during, sub->peak);
          raise(after, sub->end);
        }
      }
      Bytes now = live;
      if (!add(now, during) || !add(live, after))
        return std::nullopt;
      raise(usage.peak, now);
      raise(usage.peak, live);
    }
    usage.end = live;
    return usage;
  }

  /// A region's blocks, each counted whole (a region of one block, as
  /// every structured op's and function's is here, is exact; more blocks,
  /// whose allocations may be freed in another, are added up).
  std::optional<Usage> analyse(Region &region, Operation *fn) {
    if (region.hasOneBlock())
      return analyse(region.front(), fn);
    Usage usage;
    for (Block &block : region) {
      std::optional<Usage> sub = analyse(block, fn);
      if (!sub || !add(usage.peak, sub->peak) || !add(usage.end, sub->end))
        return std::nullopt;
    }
    return usage;
  }

  std::optional<Usage> analyse(func::FuncOp fn) {
    if (auto it = cache.find(fn); it != cache.end())
      return it->second;
    if (!active.insert(fn).second)
      return std::nullopt; // recursion
    std::optional<Usage> result = analyse(fn.getBody(), fn);
    active.erase(fn);
    cache[fn] = result;
    return result;
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

} // namespace

FailureOr<std::vector<EntrySpec>>
mlir::hkt::compiler::collectEntries(ModuleOp module) {
  std::vector<EntrySpec> entries;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn.isPublic() || fn.isExternal())
      continue;
    EntrySpec entry;
    entry.name = fn.getSymName().str();
    // The collectives of a data-parallel train step are in its own body.
    entry.collectives = fn.walk([](Operation *op) {
                            return isa<shard::ShardDialect>(op->getDialect())
                                       ? WalkResult::interrupt()
                                       : WalkResult::advance();
                          }).wasInterrupted();
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
    for (const TensorSpec &spec :
         llvm::concat<TensorSpec>(entry.args, entry.results))
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

void WorkingMemoryInstrumentation::runBeforePass(Pass *pass, Operation *op) {
  if (ran || pass->getArgument() != "finalize-memref-to-llvm")
    return;
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    return;
  ran = true;
  WorkingMemoryAnalysis analysis(module);
  for (EntrySpec &entry : entries) {
    auto fn = module.lookupSymbol<func::FuncOp>(entry.name);
    if (!fn)
      continue;
    std::optional<WorkingMemoryAnalysis::Usage> usage = analysis.analyse(fn);
    if (usage)
      entry.workingMemory = usage->peak;
    else
      entry.workingMemory.reset();
  }
}

FailureOr<std::optional<DataParallelSpec>>
mlir::hkt::compiler::collectDataParallel(ModuleOp module) {
  SmallVector<shard::GridOp> grids(module.getOps<shard::GridOp>());
  if (grids.empty())
    return std::optional<DataParallelSpec>();
  shard::GridOp grid = grids.front();
  if (grids.size() != 1 || grid.getRank() != 1 ||
      ShapedType::isDynamic(grid.getShape().front()))
    return grid.emitError("a data-parallel module has one 1-D grid of "
                          "static size (its number of ranks)");
  DataParallelSpec spec;
  spec.ranks = grid.getShape().front();
  spec.mpi = "OpenMPI";
  if (auto dlti = module->getAttrOfType<DLTIQueryInterface>("mpi.dlti")) {
    FailureOr<Attribute> impl = dlti.query(DataLayoutEntryKey(
        StringAttr::get(module.getContext(), "MPI:Implementation")));
    if (succeeded(impl))
      if (auto name = dyn_cast<StringAttr>(*impl))
        spec.mpi = name.str();
  }
  return std::optional<DataParallelSpec>(spec);
}

llvm::json::Value mlir::hkt::compiler::manifestJson(
    const CpuTarget &target, ArrayRef<EntrySpec> entries, StringRef modelConfig,
    StringRef cudaArch, const std::optional<DataParallelSpec> &dataParallel) {
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
    if (entry.deviceTwin)
      obj[key::kDeviceSymbol] = fmt::kDevicePackedSymbolPrefix + entry.name;
    if (entry.collectives)
      obj[key::kCollectives] = true;
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
  if (!target.precision.empty())
    (*manifest.getObject(key::kTarget))[key::kPrecision] = target.precision;
  if (target.tiles)
    manifest[key::kTiles] = llvm::json::Object{
        {key::kTileQ, target.tiles->tileQ},
        {key::kTileK, target.tiles->tileK},
        {key::kVectorBits, target.tiles->vectorBits},
        {key::kTilesFamily, target.tiles->family},
        {key::kRegisterRows, target.tiles->registerRows},
        {key::kRegisterVectors, target.tiles->registerVectors},
        {key::kTilesSource, target.tiles->source}};
  if (target.tiles && !target.tiles->timings.empty()) {
    llvm::json::Array timings;
    for (const CpuTiles::Timing &t : target.tiles->timings)
      timings.push_back(llvm::json::Object{{key::kRegisterRows, t.rows},
                                           {key::kRegisterVectors, t.vectors},
                                           {key::kTilesMinMs, t.minMs}});
    (*manifest.getObject(key::kTiles))[key::kTilesTuning] = std::move(timings);
  }
  if (!cudaArch.empty()) {
    llvm::json::Object &t = *manifest.getObject(key::kTarget);
    t[key::kKind] = fmt::target_kind::kCuda;
    t[key::kArch] = cudaArch.str();
  }
  if (dataParallel)
    manifest[key::kDataParallel] =
        llvm::json::Object{{key::kRanks, dataParallel->ranks},
                           {key::kMpi, dataParallel->mpi},
                           {key::kBackend, dataParallel->backend}};
  if (!modelConfig.empty()) {
    if (llvm::Expected<llvm::json::Value> model =
            llvm::json::parse(modelConfig))
      manifest[key::kModel] = std::move(*model);
    else
      llvm::consumeError(model.takeError());
  }
  return manifest;
}
