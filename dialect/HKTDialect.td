//===- HKTDialect.td - The hkt dialect ---------------------*- tablegen -*-===//
//
// The hkt dialect describes multi-scale (hierarchical kernel) attention at a
// high level. The mathematics is pinned down in shared/SPEC.md.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_HKTDIALECT_TD
#define HKT_DIALECT_HKTDIALECT_TD

include "mlir/IR/OpBase.td"

def HKT_Dialect : Dialect {
  let name = "hkt";
  let summary = "Hierarchical Kernel Transformer attention";
  let description = [{
    The `hkt` dialect describes the Hierarchical Kernel Transformer layer
    (multi-scale attention: causal downsampling to L levels, per-level scores,
    nearest upsampling, convex fusion, masks, softmax, and a hybrid
    attention / causal-convolution head) at two levels of abstraction:

    * `hkt.attention`: the whole layer (SPEC sections 1-8);
    * step ops, one per equation of the spec (`hkt.downsample`,
      `hkt.level_scores`, `hkt.upsample`, `hkt.convex_fuse`, `hkt.mask`,
      `hkt.attend`, `hkt.hybrid`), reusing upstream ops where they fit
      (`linalg.matmul` for projections, `linalg.softmax`).

    Every op works on ranked tensors in destination-passing style: the last
    operand, in `outs(...)`, is the destination and has the result's type.
    Activations are `B x T x D` (batch, sequence, model width); head `h` owns
    columns `[h*d, (h+1)*d)` of the last dimension; scores are `B x H x Tq x Tk`.
  }];
  let cppNamespace = "::mlir::hkt";
  // Function argument and result attributes that describe an entry of a
  // compiled module (hkt.name, hkt.default, hkt.range, hkt.role, hkt.bounds,
  // hkt.dims on arguments; hkt.name, hkt.inout on results; names in
  // runtime/ModuleFormat.h, meaning in docs/module-format.md).
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  // What the ops' decompositions and tiled forms are built from.
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

#endif // HKT_DIALECT_HKTDIALECT_TD
