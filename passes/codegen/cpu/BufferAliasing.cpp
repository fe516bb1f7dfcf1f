//===- BufferAliasing.cpp - which buffers may overlap ---------------------===//

#include "passes/codegen/cpu/BufferAliasing.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

Value mlir::hkt::viewRoot(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

bool mlir::hkt::isDistinctBuffer(Value root) {
  if (auto arg = dyn_cast<BlockArgument>(root))
    return isa<FunctionOpInterface>(arg.getOwner()->getParentOp()) &&
           arg.getOwner()->isEntryBlock();
  return isa_and_nonnull<memref::AllocOp, memref::AllocaOp,
                         memref::GetGlobalOp>(root.getDefiningOp());
}

bool mlir::hkt::mayAlias(Value a, Value b) {
  a = viewRoot(a);
  b = viewRoot(b);
  if (a == b)
    return true;
  if (auto ga = a.getDefiningOp<memref::GetGlobalOp>())
    if (auto gb = b.getDefiningOp<memref::GetGlobalOp>())
      return ga.getName() == gb.getName();
  return !isDistinctBuffer(a) || !isDistinctBuffer(b);
}
