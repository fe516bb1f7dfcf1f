//===- Adjoints.h - adjoints of the ops hkt functions use ------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The hkt step ops implement AdjointOpInterface themselves (dialect/
// HKTInterfaces.td); the upstream ops that hkt functions and the layer's
// decomposition use get it as external models, registered here.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_ADJOINTS_H
#define HKT_DIALECT_ADJOINTS_H

namespace mlir {
class DialectRegistry;
namespace hkt {

/// AdjointOpInterface for linalg.matmul, linalg.softmax, linalg.fill,
/// linalg.add, linalg.transpose, linalg.broadcast, tensor.extract_slice,
/// tensor.insert_slice,
/// tensor.expand_shape, tensor.collapse_shape and tensor.empty.
void registerAdjointExternalModels(DialectRegistry &registry);

} // namespace hkt
} // namespace mlir

#endif // HKT_DIALECT_ADJOINTS_H
