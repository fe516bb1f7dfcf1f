//===- KernelEquivalence.cpp - kernels that are the same op for op --------===//

#include "passes/codegen/nvvm/KernelEquivalence.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

DictionaryAttr mlir::hkt::nvvm::attributesButName(Operation *op) {
  NamedAttrList attrs(op->getAttrDictionary());
  attrs.erase(SymbolTable::getSymbolAttrName());
  return attrs.getDictionary(op->getContext());
}

llvm::hash_code mlir::hkt::nvvm::hashIgnoringName(Operation *root) {
  llvm::hash_code hash = llvm::hash_combine(
      root->getName(), attributesButName(root), root->getNumRegions());
  for (Region &region : root->getRegions())
    region.walk([&](Operation *op) {
      hash = llvm::hash_combine(hash,
                                OperationEquivalence::computeHash(
                                    op, OperationEquivalence::ignoreHashValue,
                                    OperationEquivalence::ignoreHashValue,
                                    OperationEquivalence::IgnoreLocations));
    });
  return hash;
}

bool mlir::hkt::nvvm::isEquivalentIgnoringName(Operation *a, Operation *b) {
  if (a->getName() != b->getName() ||
      a->getNumRegions() != b->getNumRegions() || a->getNumOperands() ||
      b->getNumOperands() || attributesButName(a) != attributesButName(b))
    return false;
  for (auto [ra, rb] : llvm::zip(a->getRegions(), b->getRegions()))
    if (!OperationEquivalence::isRegionEquivalentTo(
            &ra, &rb, OperationEquivalence::IgnoreLocations))
      return false;
  return true;
}

Operation *mlir::hkt::nvvm::EquivalentOps::findOrInsert(Operation *op) {
  SmallVector<Operation *, 1> &bucket = buckets[hashIgnoringName(op)];
  for (Operation *other : bucket)
    if (isEquivalentIgnoringName(other, op))
      return other;
  bucket.push_back(op);
  return nullptr;
}
