//===- KernelNames.h - what a structured op computes, for kernel names -*- C++ -*-===//
//
// The GPU path names each kernel after what it computes (hkt.kernel on a
// linalg.generic, e.g. "downsample"). The patterns that lower or decompose
// an op build every new op at that op's location, so a pass marks the ops
// it is about to rewrite with a name location, rewrites, then tags the
// generics that carry the mark and removes every mark.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_UTILS_KERNELNAMES_H
#define HKT_DIALECT_UTILS_KERNELNAMES_H

#include "dialect/HKTDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Location.h"

namespace mlir::hkt {

/// The prefix of the marks: name locations "hkt.origin:NAME".
inline constexpr llvm::StringLiteral kOriginPrefix = "hkt.origin:";

/// Wraps the location of every op `select` picks in a mark of `name(op)`
/// (by default the op's name without its dialect).
inline void markOrigins(
    Operation *root, function_ref<bool(Operation *)> select,
    function_ref<std::string(Operation *)> name = nullptr) {
  root->walk([&](Operation *op) {
    if (!select(op))
      return;
    std::string n =
        name ? name(op) : op->getName().stripDialect().str();
    op->setLoc(NameLoc::get(
        StringAttr::get(op->getContext(), kOriginPrefix + n), op->getLoc()));
  });
}

/// Tags each linalg.generic with a mark by the mark's name (hkt.kernel,
/// unless it has one) and unwraps every mark.
inline void tagKernels(Operation *root) {
  root->walk([](Operation *op) {
    auto mark = dyn_cast<NameLoc>(op->getLoc());
    if (!mark || !mark.getName().strref().starts_with(kOriginPrefix))
      return;
    if (isa<linalg::GenericOp>(op) && !op->hasAttr(kKernelAttr))
      op->setAttr(kKernelAttr,
                  StringAttr::get(op->getContext(),
                                  mark.getName().strref().drop_front(
                                      kOriginPrefix.size())));
    op->setLoc(mark.getChildLoc());
  });
}

} // namespace mlir::hkt

#endif // HKT_DIALECT_UTILS_KERNELNAMES_H
