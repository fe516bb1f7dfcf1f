//===- Differentiate.cpp - hkt-differentiate ------------------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Reverse-mode differentiation driven by AdjointOpInterface: the forward body
// is cloned into `<name>_grad`, ops without an adjoint of their own are
// decomposed (AggregatedOpInterface), then the ops are visited from the last
// to the first and each builds the gradients of its operands. The pass knows
// no op by name.
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "dialect/Utils/BatchedEntry.h"
#include "dialect/Utils/LinalgBuilders.h"
#include "passes/autodiff/Passes.h"
#include "runtime/ModuleFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "dialect/HKTDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/ScopeExit.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTDIFFERENTIATEPASS
#include "passes/autodiff/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;

namespace {

constexpr const char *kNameAttr = "hkt.name";

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// The user-facing name of argument or result `index` (its hkt.name, or
/// `prefix<index>`).
std::string nameOf(DictionaryAttr attrs, StringRef prefix, unsigned index) {
  if (attrs)
    if (auto name = attrs.getAs<StringAttr>(kNameAttr))
      return name.str();
  return (prefix + Twine(index)).str();
}

/// Tags the linalg.generic ops an adjoint builds with what they compute
/// ("downsample_grad"; hkt.kernel), which the GPU kernels are named after.
struct KernelNamer : OpBuilder::Listener {
  explicit KernelNamer(Operation *primal)
      : name(StringAttr::get(primal->getContext(),
                             primal->getName().stripDialect() + "_grad")) {}
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint previous) override {
    if (isa<linalg::GenericOp>(op) && !op->hasAttr(kKernelAttr))
      op->setAttr(kKernelAttr, name);
  }
  StringAttr name;
};

/// Decomposes, until none is left, every op of `block` that has no adjoint
/// of its own but an AggregatedOpInterface decomposition.
LogicalResult decomposeAggregates(Block &block) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (isa<AdjointOpInterface>(op))
        continue;
      auto aggregate = dyn_cast<linalg::AggregatedOpInterface>(op);
      if (!aggregate)
        continue;
      OpBuilder b(&op);
      FailureOr<SmallVector<Value>> parts = aggregate.decomposeOperation(b);
      if (failed(parts))
        return failure();
      op.replaceAllUsesWith(*parts);
      op.erase();
      changed = true;
    }
  }
  return success();
}

/// The gradient function's signature: the function's arguments, then one
/// gradient per float result (`seeded`: those results); results: the
/// function's own if `returnValues`, then one gradient per float argument
/// (`wrt`: those arguments), each named after what it is the gradient of.
struct GradSignature {
  SmallVector<Type> inputs, results;
  SmallVector<DictionaryAttr> inputAttrs, resultAttrs;
  SmallVector<unsigned> seeded, wrt;

  GradSignature(func::FuncOp fn, bool returnValues) {
    FunctionType type = fn.getFunctionType();
    OpBuilder b(fn.getContext());
    namespace attr = ::hkt::format::attr;
    // The bound of each dynamic symbol, from the arguments' hkt.bounds.
    llvm::StringMap<int64_t> bounds;
    for (unsigned i = 0; i < type.getNumInputs(); ++i) {
      auto dims = fn.getArgAttrOfType<ArrayAttr>(i, attr::kDims);
      auto bnd = fn.getArgAttrOfType<DenseI64ArrayAttr>(i, attr::kBounds);
      if (!dims || !bnd)
        continue;
      for (auto [d, sym] : llvm::enumerate(dims))
        if (auto str = dyn_cast<StringAttr>(sym); str && !str.empty())
          bounds[str.getValue()] = bnd[d];
    }
    // A gradient's attributes: its name and, of a dynamic shape, the
    // symbols (hkt.dims) of the value it is the gradient of, with their
    // bounds when it is an argument.
    auto named = [&](const std::string &name, ArrayAttr dims = {}, Type t = {},
                     bool argument = false) {
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr(kNameAttr, b.getStringAttr(name))};
      if (dims) {
        attrs.push_back(b.getNamedAttr(attr::kDims, dims));
        if (argument) {
          SmallVector<int64_t> bnd;
          for (auto [d, sym] : llvm::enumerate(dims)) {
            auto str = cast<StringAttr>(sym);
            bnd.push_back(str.empty() ? cast<RankedTensorType>(t).getDimSize(d)
                                      : bounds.lookup(str.getValue()));
          }
          attrs.push_back(
              b.getNamedAttr(attr::kBounds, b.getDenseI64ArrayAttr(bnd)));
        }
      }
      return b.getDictionaryAttr(attrs);
    };
    inputs.assign(type.getInputs().begin(), type.getInputs().end());
    for (unsigned i = 0; i < type.getNumInputs(); ++i)
      inputAttrs.push_back(fn.getArgAttrDict(i));
    for (auto [i, t] : llvm::enumerate(type.getResults())) {
      if (!isFloatTensor(t))
        continue;
      seeded.push_back(i);
      inputs.push_back(t);
      inputAttrs.push_back(
          named("d" + nameOf(fn.getResultAttrDict(i), "result", i),
                fn.getResultAttrOfType<ArrayAttr>(i, attr::kDims), t,
                /*argument=*/true));
    }
    if (returnValues)
      for (unsigned i = 0; i < type.getNumResults(); ++i) {
        results.push_back(type.getResult(i));
        resultAttrs.push_back(fn.getResultAttrDict(i));
      }
    for (auto [i, t] : llvm::enumerate(type.getInputs())) {
      if (!isFloatTensor(t))
        continue;
      wrt.push_back(i);
      results.push_back(t);
      resultAttrs.push_back(
          named("d" + nameOf(fn.getArgAttrDict(i), "arg", i),
                fn.getArgAttrOfType<ArrayAttr>(i, attr::kDims)));
    }
  }
};

/// The gradients of the reverse sweep, summed where a value is used more
/// than once.
struct GradientMap {
  GradientMap(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  OpBuilder &b;
  Location loc;
  DenseMap<Value, Value> grads;

  /// Adds `g` (null: nothing) to the gradient of `v`.
  void accumulate(Value v, Value g) {
    if (!g)
      return;
    auto [it, inserted] = grads.try_emplace(v, g);
    if (inserted)
      return;
    Value acc = it->second;
    if (Value sum = accumulateInPlace(v, acc, g)) {
      it->second = sum;
      return;
    }
    Value sum = emptyLike(b, loc, v);
    it->second = linalg::AddOp::create(b, loc, v.getType(), ValueRange{acc, g},
                                       ValueRange{sum})
                     .getResult(0);
  }

private:
  /// `acc + g` without a whole-tensor add, where the adjoints' forms allow
  /// (null otherwise). A gradient that reaches a value by several paths
  /// (dX through Q, K and V; a stacked weight through each level's slice)
  /// would otherwise be one zero fill and one add of the whole tensor per
  /// path: at T = 1024, D = 512, 20 of the layer gradient's 82 MiB of
  /// fills and all but 2 of its 22 MiB of adds (docs/performance.md, "the
  /// gradient's sums in place"):
  /// - g = A B into zeros (a fresh matmul): the matmul accumulates into acc;
  /// - g = y inserted into zeros: y is added to acc's slice only, or just
  ///   inserted where acc is zeros there (slices of a stacked weight);
  /// - acc = x inserted into zeros: the same with the roles swapped.
  /// Both are fresh values of the reverse sweep; an adjoint may have given
  /// the same one to several operands (linalg.add's), so one that another
  /// gradient holds is left as it is.
  Value accumulateInPlace(Value v, Value acc, Value g) {
    if (!g.use_empty() || heldByAnother(g, Value()))
      return Value();
    // The matmul's product, possibly given a unit batch dimension.
    auto expand = g.getDefiningOp<tensor::ExpandShapeOp>();
    Value product = expand ? expand.getSrc() : g;
    auto mm = product.getDefiningOp<linalg::MatmulOp>();
    if (mm && (!expand || product.hasOneUse())) {
      Value init = mm.getDpsInits()[0];
      if (isZeroFill(init) && init.hasOneUse() && dominates(acc, mm)) {
        Operation *fill = init.getDefiningOp();
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(mm);
        Value into = acc;
        if (expand)
          into =
              tensor::CollapseShapeOp::create(b, loc, expand.getSrcType(), acc,
                                              expand.getReassociationIndices());
        mm.getDpsInitsMutable()[0].assign(into);
        eraseIfDead(fill);
        return g;
      }
    }
    if (auto slice = sliceOfZeros(g)) {
      Value sum = addSlice(acc, slice);
      eraseIfDead(slice);
      return sum;
    }
    if (auto slice = sliceOfZeros(acc);
        slice && acc.use_empty() && !heldByAnother(acc, v)) {
      Value sum = addSlice(g, slice);
      eraseIfDead(slice);
      return sum;
    }
    return Value();
  }

  /// True when the gradient of a value other than `self` is `x`.
  bool heldByAnother(Value x, Value self) const {
    return llvm::any_of(grads, [&](const auto &entry) {
      return entry.second == x && entry.first != self;
    });
  }

  /// `x` inserted into a zero fill, if `v` is that.
  static tensor::InsertSliceOp sliceOfZeros(Value v) {
    auto insert = v.getDefiningOp<tensor::InsertSliceOp>();
    if (!insert || !isZeroFill(insert.getDest()))
      return nullptr;
    return insert;
  }

  /// `acc` plus `slice`'s source at its place: the source inserted as it is
  /// where acc is a chain of insertions into zeros that leaves that place
  /// zero, else added to acc's slice there.
  Value addSlice(Value acc, tensor::InsertSliceOp slice) {
    Value x = slice.getSource();
    if (!zerosAt(acc, slice)) {
      Value part = tensor::ExtractSliceOp::create(
          b, loc, slice.getSourceType(), acc, slice.getMixedOffsets(),
          slice.getMixedSizes(), slice.getMixedStrides());
      // Into the slice itself: an elementwise op bufferizes in place there.
      x = linalg::AddOp::create(b, loc, x.getType(), ValueRange{part, x},
                                ValueRange{part})
              .getResult(0);
    }
    return tensor::InsertSliceOp::create(
               b, loc, x, acc, slice.getMixedOffsets(), slice.getMixedSizes(),
               slice.getMixedStrides())
        .getResult();
  }

  /// True when `acc` is zeros wherever `slice` writes: insertions into a
  /// zero fill, each at static places disjoint from the slice's.
  static bool zerosAt(Value acc, tensor::InsertSliceOp slice) {
    while (true) {
      if (isZeroFill(acc))
        return true;
      auto insert = acc.getDefiningOp<tensor::InsertSliceOp>();
      if (!insert || !disjoint(insert, slice))
        return false;
      acc = insert.getDest();
    }
  }

  /// True when two unit-stride slices of the same shape provably do not
  /// overlap: along some dimension their static ranges are apart.
  static bool disjoint(tensor::InsertSliceOp a, tensor::InsertSliceOp b) {
    if (a.getDestType() != b.getDestType() || !a.hasUnitStride() ||
        !b.hasUnitStride())
      return false;
    for (auto [oa, sa, ob, sb] :
         llvm::zip(a.getStaticOffsets(), a.getStaticSizes(),
                   b.getStaticOffsets(), b.getStaticSizes())) {
      if (ShapedType::isDynamic(oa) || ShapedType::isDynamic(sa) ||
          ShapedType::isDynamic(ob) || ShapedType::isDynamic(sb))
        continue;
      if (oa + sa <= ob || ob + sb <= oa)
        return true;
    }
    return false;
  }

  /// `v` is available at `op` (a block argument, or defined before it).
  static bool dominates(Value v, Operation *op) {
    Operation *def = v.getDefiningOp();
    return !def ||
           (def->getBlock() == op->getBlock() && def->isBeforeInBlock(op));
  }

  /// Erases `op` and then its operands' producers that it leaves unused.
  static void eraseIfDead(Operation *op) {
    if (!op || !op->use_empty() || !isOpTriviallyDead(op))
      return;
    SmallVector<Operation *> producers;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        producers.push_back(def);
    op->erase();
    for (Operation *def : producers)
      eraseIfDead(def);
  }

public:
  /// The gradients of `op`'s operands from those of its results, through
  /// its AdjointOpInterface; nothing if no gradient reached it.
  LogicalResult propagate(Operation *op) {
    bool reached =
        llvm::any_of(op->getResults(), [&](Value r) { return grads.count(r); });
    if (!reached)
      return success();
    bool hasFloatOperand = llvm::any_of(op->getOperandTypes(), isFloatTensor);
    auto adjoint = dyn_cast<AdjointOpInterface>(op);
    if (!adjoint) {
      if (!hasFloatOperand)
        return success(); // constants and the like: nothing flows further up
      return op->emitOpError(
          "has no adjoint (AdjointOpInterface), so "
          "hkt-differentiate cannot differentiate through it");
    }
    SmallVector<Value> resultGrads;
    for (Value r : op->getResults()) {
      Value g = grads.lookup(r);
      if (!g && isFloatTensor(r.getType()))
        g = zerosLike(b, op->getLoc(), r);
      resultGrads.push_back(g);
    }
    SmallVector<Value> operandGrads;
    // The hkt ops' adjoints only: the upstream ops' are fills, transposes
    // and matmuls, whose kind names them well enough.
    KernelNamer namer(op);
    OpBuilder::Listener *previous = b.getListener();
    if (isa<HKTDialect>(op->getDialect()))
      b.setListener(&namer);
    LogicalResult built = adjoint.buildAdjoint(b, resultGrads, operandGrads);
    b.setListener(previous);
    if (failed(built))
      return failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError("adjoint built ")
             << operandGrads.size() << " operand gradients for "
             << op->getNumOperands() << " operands";
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads)) {
      if (g && g.getType() != operand.getType())
        return op->emitOpError("adjoint of an operand of type ")
               << operand.getType() << " has type " << g.getType();
      accumulate(operand, g);
    }
    return success();
  }
};

/// Builds `<fn>_grad` after `fn`.
LogicalResult differentiate(func::FuncOp fn, bool returnValues) {
  Location loc = fn.getLoc();
  if (!fn.getBody().hasOneBlock())
    return fn.emitError("hkt-differentiate: the function must be one block");
  FunctionType type = fn.getFunctionType();
  // Dynamic shapes need their symbols (hkt.dims): the gradients take them.
  namespace attr = ::hkt::format::attr;
  auto checkShaped = [&](Type t, DictionaryAttr attrs) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor)
      return fn.emitError("hkt-differentiate: arguments and results must be "
                          "ranked tensors, got ")
             << t;
    if (!tensor.hasStaticShape() && (!attrs || !attrs.get(attr::kDims)))
      return fn.emitError("hkt-differentiate: an argument or result of "
                          "dynamic shape needs '")
             << attr::kDims << "' (its gradient takes its symbols), got " << t;
    return success();
  };
  for (unsigned i = 0; i < type.getNumInputs(); ++i)
    if (failed(checkShaped(type.getInput(i), fn.getArgAttrDict(i))))
      return failure();
  for (unsigned i = 0; i < type.getNumResults(); ++i)
    if (failed(checkShaped(type.getResult(i), fn.getResultAttrDict(i))))
      return failure();

  GradSignature sig(fn, returnValues);
  OpBuilder b(fn.getContext());
  b.setInsertionPointAfter(fn);
  std::string gradName = (fn.getSymName() + "_grad").str();
  if (SymbolTable::lookupNearestSymbolFrom(fn, b.getStringAttr(gradName)))
    return fn.emitError("hkt-differentiate: '")
           << gradName << "' exists already";
  auto grad = func::FuncOp::create(b, loc, gradName,
                                   b.getFunctionType(sig.inputs, sig.results));
  grad.setVisibility(fn.getVisibility());
  grad.setAllArgAttrs(sig.inputAttrs);
  grad.setAllResultAttrs(sig.resultAttrs);
  if (fn->hasAttr("llvm.emit_c_interface"))
    grad->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *entry = grad.addEntryBlock();
  // A gradient function that cannot be completed is not left behind.
  llvm::scope_exit eraseOnFailure([&] {
    if (grad)
      grad.erase();
  });

  // The forward, recomputed.
  IRMapping mapping;
  for (unsigned i = 0; i < type.getNumInputs(); ++i)
    mapping.map(fn.getArgument(i), entry->getArgument(i));
  b.setInsertionPointToEnd(entry);
  // The return is cloned too, so that it follows the decomposition; it is
  // dropped once the values it returns are known.
  for (Operation &op : fn.getBody().front())
    b.clone(op, mapping);
  if (failed(decomposeAggregates(*entry)))
    return failure();
  Operation *clonedReturn = entry->getTerminator();
  SmallVector<Value> outputs(clonedReturn->getOperands());
  clonedReturn->erase();
  SmallVector<Operation *> forward;
  for (Operation &op : *entry)
    forward.push_back(&op);

  // Gradients, summed where a value is used more than once.
  b.setInsertionPointToEnd(entry);
  GradientMap grads(b, loc);
  for (auto [k, r] : llvm::enumerate(sig.seeded))
    grads.accumulate(outputs[r], entry->getArgument(type.getNumInputs() + k));
  for (Operation *op : llvm::reverse(forward))
    if (failed(grads.propagate(op)))
      return failure();

  SmallVector<Value> returned;
  if (returnValues)
    returned.append(outputs.begin(), outputs.end());
  for (unsigned i : sig.wrt) {
    Value g = grads.grads.lookup(entry->getArgument(i));
    returned.push_back(g ? g : zerosLike(b, loc, entry->getArgument(i)));
  }
  func::ReturnOp::create(b, loc, returned);
  // The forward values no gradient needs (the result itself, often).
  for (Operation *op : llvm::reverse(forward))
    if (isOpTriviallyDead(op))
      op->erase();
  eraseOnFailure.release();
  return success();
}

/// A batched entry (hkt.row_function, BatchedEntry.h) whose results are
/// stacked rows: its row function is differentiated, and `<name>_grad` runs
/// that gradient on every row the same way: the row arguments and the rows
/// of each seed in, the rows of their gradients stacked and the gradients
/// of the other arguments (the weights) summed over the rows, in row order.
LogicalResult differentiateBatched(func::FuncOp fn, bool returnValues) {
  namespace attr = ::hkt::format::attr;
  auto rowRef = fn->getAttrOfType<FlatSymbolRefAttr>(attr::kRowFunction);
  auto row = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(fn, rowRef);
  if (!row)
    return fn.emitError("hkt-differentiate: no row function ") << rowRef;
  // The row arguments are those with the batch dimension B.
  auto isBatched = [](DictionaryAttr attrs) {
    auto dims = attrs ? attrs.getAs<ArrayAttr>(attr::kDims) : ArrayAttr();
    return dims && !dims.empty() && cast<StringAttr>(dims[0]).getValue() == "B";
  };
  SmallVector<std::string> rowArgs;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (isBatched(fn.getArgAttrDict(i)))
      rowArgs.push_back(nameOf(fn.getArgAttrDict(i), "arg", i));
  for (unsigned i = 0; i < fn.getNumResults(); ++i) {
    if (!isBatched(fn.getResultAttrDict(i)))
      return fn.emitError("hkt-differentiate: a batched entry's results must "
                          "be stacked rows (dimension 0 'B'); result ")
             << i << " is not";
    // The seed of a stacked result is a row argument of the gradient.
    rowArgs.push_back("d" + nameOf(fn.getResultAttrDict(i), "result", i));
  }
  if (failed(differentiate(row, returnValues)))
    return failure();
  auto rowGrad = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      fn, StringAttr::get(fn.getContext(), (row.getSymName() + "_grad").str()));
  // Returned values are stacked like the entry's results; the gradient of a
  // row argument is stacked, that of any other argument summed.
  SmallVector<Combine> combine;
  for (unsigned i = 0; i < rowGrad.getNumResults(); ++i) {
    std::string name = nameOf(rowGrad.getResultAttrDict(i), "result", i);
    bool stacked = i < (returnValues ? fn.getNumResults() : 0) ||
                   llvm::any_of(rowArgs, [&](const std::string &a) {
                     return "d" + a == name;
                   });
    combine.push_back(stacked ? Combine::Rows : Combine::Sum);
  }
  int64_t maxBatch = 0;
  for (unsigned i = 0; i < fn.getNumArguments() && !maxBatch; ++i)
    if (isBatched(fn.getArgAttrDict(i)))
      maxBatch = fn.getArgAttrOfType<DenseI64ArrayAttr>(i, attr::kBounds)[0];
  SmallVector<StringRef> rowArgRefs(rowArgs.begin(), rowArgs.end());
  OpBuilder b(fn.getContext());
  b.setInsertionPointAfter(fn);
  func::FuncOp grad = buildBatchedEntry(
      b, fn.getLoc(), rowGrad, (fn.getSymName() + "_grad").str(), maxBatch,
      combine, std::nullopt, rowArgRefs, RowOrder::InOrder);
  grad.setVisibility(fn.getVisibility());
  return success();
}

struct HktDifferentiatePass
    : public mlir::hkt::impl::HktDifferentiatePassBase<HktDifferentiatePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> targets;
    if (functions.empty()) {
      for (auto fn : module.getOps<func::FuncOp>())
        if (fn.isPublic() && !fn.isExternal())
          targets.push_back(fn);
    } else {
      for (const std::string &name : functions) {
        auto fn = module.lookupSymbol<func::FuncOp>(name);
        if (!fn || fn.isExternal()) {
          module.emitError("hkt-differentiate: no function '") << name << "'";
          return signalPassFailure();
        }
        targets.push_back(fn);
      }
    }
    for (func::FuncOp fn : targets)
      if (failed(fn->hasAttr(::hkt::format::attr::kRowFunction)
                     ? differentiateBatched(fn, returnValues)
                     : differentiate(fn, returnValues)))
        return signalPassFailure();
  }
};

} // namespace
