//===- Passes.td - hkt passes ------------------------------*- tablegen -*-===//

#ifndef HKT_PASSES_PASSES_TD
#define HKT_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def HktDecomposePass : Pass<"hkt-decompose"> {
  let summary = "Decompose hkt.attention into the hkt step ops and linalg";
  let description = [{
    Rewrites every `hkt.attention` into its steps (shared/SPEC.md 1-8) by
    calling the op's `decomposeOperation` (AggregatedOpInterface): projections
    become `linalg.matmul` on `(B*T) x D` views, each level a
    `hkt.downsample` / `hkt.level_scores` / `hkt.upsample` chain, then
    `hkt.convex_fuse`, `hkt.mask`, `linalg.softmax`, `hkt.attend`,
    `hkt.hybrid` and the output projection into the op's destination.

    Before:

    ```mlir
    %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : ...)
           outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 1 : i64}
           -> tensor<2x8x4xf32>
    ```

    After (abridged):

    ```mlir
    %v = linalg.matmul ins(%x2d, %wv : ...) outs(%zero : tensor<16x4xf32>)
    %s = hkt.level_scores ins(%q, %k : ...) outs(%e : tensor<2x2x8x8xf32>)
    %f = hkt.convex_fuse ins(%s : ...) theta(%theta : tensor<2x1xf32>) outs(...)
    %m = hkt.mask ins(%f : ...) outs(...)
    %p = linalg.softmax dimension(3) ins(%m : ...) outs(...)
    %a = hkt.attend ins(%p, %v3d : ...) outs(...)
    %y = linalg.matmul ins(%a2d, %wo : ...) outs(...)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

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

def HktMemrefCopyToLinalgPass : Pass<"hkt-memref-copy-to-linalg"> {
  let summary = "Rewrite strided memref.copy as linalg.copy (loops, no runtime call)";
  let description = [{
    `finalize-memref-to-llvm` lowers a `memref.copy` between non-contiguous
    memrefs to a call of `memrefCopy`, a function of MLIR's C runner
    utilities, which a compiled module does not link. This pass rewrites those
    copies as `linalg.copy`, which `convert-linalg-to-loops` turns into plain
    loops; copies between identity-layout memrefs stay `memref.copy` (they
    become `memcpy`).

    Before:

    ```mlir
    memref.copy %a, %sub : memref<2x9x4xf32> to memref<2x9x4xf32, strided<[44, 4, 1], offset: 8>>
    ```

    After:

    ```mlir
    linalg.copy ins(%a : memref<2x9x4xf32>)
                outs(%sub : memref<2x9x4xf32, strided<[44, 4, 1], offset: 8>>)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

#endif // HKT_PASSES_PASSES_TD
