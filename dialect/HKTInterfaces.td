//===- HKTInterfaces.td - hkt op interfaces ----------------*- tablegen -*-===//
//
// The interface that reverse-mode differentiation (hkt-differentiate) is
// built on: every differentiable op builds its own adjoint.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_HKTINTERFACES_TD
#define HKT_DIALECT_HKTINTERFACES_TD

include "mlir/IR/OpBase.td"

def HKT_AdjointOpInterface : OpInterface<"AdjointOpInterface"> {
  let description = [{
    An op on tensors that can build its vector-Jacobian product: given the
    gradients of the loss with respect to its results, the gradients with
    respect to its operands. `hkt-differentiate` drives reverse-mode
    differentiation of a function by this interface alone; an op without it
    is decomposed first (`AggregatedOpInterface`, e.g. `hkt.attention`) or
    refused.

    The hkt step ops implement it in the dialect; upstream ops that hkt
    functions use (`linalg.matmul`, `linalg.softmax`, `linalg.fill`,
    `linalg.add`, `linalg.transpose`, `tensor.extract_slice`,
    `tensor.insert_slice`, `tensor.expand_shape`, `tensor.collapse_shape`,
    `tensor.empty`) get it as external models (dialect/Adjoints.cpp).
  }];
  let cppNamespace = "::mlir::hkt";
  let methods = [
    InterfaceMethod<[{
        Builds, at the builder's insertion point (after the op, which
        dominates it), the gradients of the op's operands given
        `resultGrads`, one per result, each of the result's type (a result
        whose gradient is zero gets a zero tensor). Fills `operandGrads` with
        one value per operand, of the operand's type, or null where the
        operand gets no gradient (integer tensors, destinations that are
        overwritten, scalars). A destination that the op accumulates into
        (`linalg.matmul`'s `outs`) gets the result's gradient.
      }],
      "::llvm::LogicalResult", "buildAdjoint",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

#endif // HKT_DIALECT_HKTINTERFACES_TD
