//===- ZeroFill.cpp - zero fills a kernel can absorb ----------------------===//

#include "passes/codegen/nvvm/ZeroFill.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

linalg::FillOp mlir::hkt::nvvm::absorbableZeroFill(Operation *consumer,
                                                   Value buffer) {
  // A fresh allocation: no other value (an argument, a view made earlier)
  // can alias it unseen.
  if (!buffer.getDefiningOp<memref::AllocOp>())
    return nullptr;
  linalg::FillOp fill;
  for (Operation *user : buffer.getUsers()) {
    if (user == consumer)
      continue;
    Operation *inBlock = consumer->getBlock()->findAncestorOpInBlock(*user);
    if (!inBlock)
      return nullptr;
    if (!inBlock->isBeforeInBlock(consumer))
      continue; // after the consumer
    auto candidate = dyn_cast<linalg::FillOp>(user);
    if (!candidate || fill)
      return nullptr;
    fill = candidate;
  }
  if (fill && matchPattern(fill.getDpsInputs()[0], m_AnyZeroFloat()))
    return fill;
  return nullptr;
}
