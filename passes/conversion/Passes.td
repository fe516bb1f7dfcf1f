//===- Passes.td - hkt -> linalg (the reference lowering) --*- tablegen -*-===//

#ifndef HKT_PASSES_CONVERSION_PASSES_TD
#define HKT_PASSES_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def HktLowerToLinalgPass : Pass<"hkt-lower-to-linalg"> {
  let summary = "Lower the hkt step ops to linalg.generic (the reference path)";
  let description = [{
    Lowers every hkt step op to `linalg.generic` ops on tensors (plus
    `tensor.insert_slice` for causal zero padding and `tensor.expand_shape` to
    split heads), and decomposes `linalg.softmax` into its generic steps so
    that every structured op bufferizes and lowers to loops. Score matrices
    are materialised: this is the reference path, correctness over speed.

    Before:

    ```mlir
    %u = hkt.upsample ins(%s : tensor<1x1x2x2xf32>)
           outs(%e : tensor<1x1x4x4xf32>) factor = 2 -> tensor<1x1x4x4xf32>
    ```

    After:

    ```mlir
    #in = affine_map<(b, h, i, j) -> (b, h, i floordiv 2, j floordiv 2)>
    %u = linalg.generic {indexing_maps = [#in, #id],
                         iterator_types = ["parallel", ...]}
           ins(%s : tensor<1x1x2x2xf32>) outs(%e : tensor<1x1x4x4xf32>) {
         ^bb0(%a: f32, %o: f32):
           linalg.yield %a : f32
         } -> tensor<1x1x4x4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // HKT_PASSES_CONVERSION_PASSES_TD
