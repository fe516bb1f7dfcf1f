//===- ResultsToOutParams.cpp - hkt-results-to-out-params -----------------===//
//
// Results of dynamic shape -> caller-allocated out-parameters, which
// upstream buffer-results-to-out-params leaves as returned memrefs (see the
// pass description).
//
//===----------------------------------------------------------------------===//

#include "passes/transforms/Passes.h"
#include "runtime/ModuleFormat.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/Inliner.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTRESULTSTOOUTPARAMSPASS
#include "passes/transforms/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {
bool isDynamicMemRef(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && !memref.hasStaticShape();
}

/// Inlines every call of the private `fn` and erases it. Its affine.apply
/// ops become arith first: their operands would not be valid affine symbols
/// inside the caller's loops, which the affine inliner refuses.
LogicalResult inlineEverywhere(func::FuncOp fn, ModuleOp module) {
  SmallVector<affine::AffineApplyOp> applies;
  fn.walk([&](affine::AffineApplyOp op) { applies.push_back(op); });
  for (affine::AffineApplyOp op : applies) {
    OpBuilder b(op);
    std::optional<SmallVector<Value, 8>> expanded = affine::expandAffineMap(
        b, op.getLoc(), op.getAffineMap(), llvm::to_vector(op.getOperands()));
    if (!expanded)
      return op.emitError("cannot expand this affine.apply for inlining");
    op.getResult().replaceAllUsesWith((*expanded)[0]);
    op.erase();
  }
  SmallVector<func::CallOp> calls;
  module.walk([&](func::CallOp call) {
    if (call.getCallee() == fn.getSymName())
      calls.push_back(call);
  });
  InlinerInterface interface(module.getContext());
  InlinerConfig config;
  for (func::CallOp call : calls) {
    if (failed(inlineCall(interface, config.getCloneCallback(), call, fn,
                          &fn.getBody())))
      return call.emitError() << "cannot inline '" << fn.getSymName()
                              << "', which returns a memref of dynamic shape";
    call.erase();
  }
  // A batched entry that named it as its row function no longer has one.
  StringAttr name = fn.getSymNameAttr();
  for (auto entry : module.getOps<func::FuncOp>())
    if (auto row = entry->getAttrOfType<FlatSymbolRefAttr>(
            ::hkt::format::attr::kRowFunction);
        row && row.getAttr() == name)
      entry->removeAttr(::hkt::format::attr::kRowFunction);
  fn.erase();
  return success();
}

LogicalResult convert(func::FuncOp fn, ModuleOp module) {
  if (!SymbolTable::symbolKnownUseEmpty(fn, module))
    return fn.emitError()
           << "returns a memref of dynamic shape and has callers: only "
              "entries (functions nothing calls) get out-parameters for "
              "such results";
  for (auto [i, type] : llvm::enumerate(fn.getResultTypes()))
    if (!isa<MemRefType>(type))
      return fn.emitError() << "result #" << i << " has type " << type
                            << "; out-parameters are memrefs (bufferize "
                               "first)";
  unsigned numArgs = fn.getNumArguments(), numResults = fn.getNumResults();
  SmallVector<Type> types(fn.getResultTypes());
  for (auto [i, type] : llvm::enumerate(types))
    (void)fn.insertArgument(numArgs + i, type, DictionaryAttr(), fn.getLoc());

  SmallVector<func::ReturnOp> returns;
  fn.walk([&](func::ReturnOp ret) { returns.push_back(ret); });
  llvm::SmallPtrSet<Operation *, 4> hoisted;
  OpBuilder b(fn.getContext());
  for (func::ReturnOp ret : returns) {
    b.setInsertionPoint(ret);
    for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
      Value out = fn.getArgument(numArgs + i);
      // A static buffer the function allocates and returns from its only
      // return is the out-parameter itself (no copy), as upstream's
      // hoist-static-allocs does. The rest is copied: a dynamic result's
      // size is the one the caller allocated, from the same symbols.
      auto alloc = value.getDefiningOp<memref::AllocOp>();
      if (returns.size() == 1 && alloc && alloc.getType().hasStaticShape() &&
          alloc.getType() == out.getType() &&
          hoisted.insert(alloc).second) {
        alloc.getResult().replaceAllUsesWith(out);
        continue;
      }
      memref::CopyOp::create(b, ret.getLoc(), value, out);
    }
    b.setInsertionPoint(ret);
    func::ReturnOp::create(b, ret.getLoc());
    ret.erase();
  }
  for (Operation *alloc : hoisted)
    alloc->erase();
  (void)fn.eraseResults(llvm::BitVector(numResults, true));
  return success();
}

struct HktResultsToOutParamsPass
    : public mlir::hkt::impl::HktResultsToOutParamsPassBase<
          HktResultsToOutParamsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (func::FuncOp fn :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (fn.isExternal() ||
          llvm::none_of(fn.getResultTypes(), isDynamicMemRef))
        continue;
      if (failed(fn.isPrivate() && !SymbolTable::symbolKnownUseEmpty(fn, module)
                     ? inlineEverywhere(fn, module)
                     : convert(fn, module)))
        return signalPassFailure();
    }
  }
};
} // namespace
