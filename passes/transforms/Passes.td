//===- Passes.td - hkt -> hkt and target-independent passes *- tablegen -*-===//

#ifndef HKT_PASSES_TRANSFORMS_PASSES_TD
#define HKT_PASSES_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def HktDecomposePass : Pass<"hkt-decompose"> {
  let summary = "Decompose hkt.attention and tiles of hkt.online_attention";
  let description = [{
    Calls `decomposeOperation` (AggregatedOpInterface) of every
    `hkt.attention` and of every `hkt.online_attention` that is one tile (one
    batch row and one head, static, whole coarse rows: what upstream tiling
    by `[1, 1, tq, tk]` gives; see the op). Upstream's
    `transform.structured.decompose_interface` cannot do the latter in MLIR
    22: it expects one result per decomposed op and the online op has three.

    `hkt.attention` becomes its steps (shared/SPEC.md 1-8): projections
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

def HktFusePass : Pass<"hkt-fuse"> {
  let summary = "Fuse scores, upsampling, fusion, masks and softmax into hkt.fused_attention";
  let description = [{
    Finds the chain SPEC 3-6 is written as, from `hkt.attend` backwards:

    ```
    level_scores(q_l, k_l) -> [upsample by f_l] -> convex_fuse(theta) -> mask
      -> linalg.softmax (over keys) -> attend(v)
    ```

    (as `hkt-decompose` produces it from `hkt.attention`, which this pass
    decomposes first, or as written by hand), and replaces it with one
    `hkt.fused_attention` (with the convex weights softmax(theta)), which
    `hkt-cpu-lower-online-attention` turns into an `hkt.online_attention` that
    never materialises a T x T matrix, and `hkt-differentiate` into an
    `hkt.online_attention_backward` that never does either. A chain that
    does not match exactly (another upsampling, an intermediate with other
    users, a level 0 that is upsampled) is left alone and still lowers
    through the reference path.

    Before:

    ```mlir
    %s0 = hkt.level_scores ins(%q0, %k0 : ...) outs(...)
    %s1 = hkt.level_scores ins(%q1, %k1 : ...) outs(...)
    %u1 = hkt.upsample ins(%s1 : ...) outs(...) factor = 2
    %f  = hkt.convex_fuse ins(%s0, %u1 : ...) theta(%theta : ...) outs(...)
    %m  = hkt.mask ins(%f : ...) outs(...) {causal = true}
    %p  = linalg.softmax dimension(3) ins(%m : ...) outs(...)
    %a  = hkt.attend ins(%p, %v : ...) outs(%init : ...)
    ```

    After:

    ```mlir
    %lambda = linalg.softmax dimension(1) ins(%theta : ...) outs(...)
    %a, %lse = hkt.fused_attention ins(%q0, %q1 : ...) keys(%k0, %k1 : ...)
        values(%v : ...) weights(%lambda : ...) outs(%init, %lse_init : ...)
        {causal = true, factors = array<i64: 1, 2>}
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HktResultsToOutParamsPass : Pass<"hkt-results-to-out-params", "::mlir::ModuleOp"> {
  let summary = "Make every result of a function that returns a dynamic-shaped memref a caller-allocated out-parameter";
  let description = [{
    Upstream `buffer-results-to-out-params` leaves results of dynamic shape
    as returned memrefs: it cannot allocate them at the call site. A compiled
    module's caller can (the manifest sizes a result's dynamic dimensions
    from the symbols of the arguments, docs/module-format.md), so for each
    function with a body that returns a memref of dynamic shape this pass
    appends one out-parameter per result, in result order (the convention
    of `buffer-results-to-out-params`), writes each returned buffer into its
    out-parameter and returns nothing. A static buffer allocated in the
    function and returned from its only return is replaced by its
    out-parameter; every other result is copied (`memref.copy`; the
    deallocation pipeline, which runs after, frees the source). Run before
    `buffer-results-to-out-params`, which then finds nothing to do in these
    functions. A private function that has callers (a batched entry's row
    function of dynamic length, BatchedEntry.h) is inlined at its calls
    instead, its buffers then freed by the caller's deallocation; a public
    one with callers is refused: its calls would need the sizes.

    Before:

    ```mlir
    func.func @f(%x: memref<?x4xf32>) -> (memref<?x4xf32>, memref<f32>) {
      ...
      return %y, %s : memref<?x4xf32>, memref<f32>
    }
    ```

    After:

    ```mlir
    func.func @f(%x: memref<?x4xf32>, %out0: memref<?x4xf32>, %out1: memref<f32>) {
      ...
      memref.copy %y, %out0 : memref<?x4xf32> to memref<?x4xf32>
      memref.copy %s, %out1 : memref<f32> to memref<f32>
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
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

def HktDeallocAfterLastUsePass : Pass<"hkt-dealloc-after-last-use"> {
  let summary = "Free each buffer right after its last use, not at the end of its block";
  let description = [{
    Upstream's ownership-based buffer deallocation frees a buffer at the end
    of the block that allocated it, so in a long straight-line function
    (a layer's gradient: the forward recomputed, then every adjoint) every
    buffer lives until the return and the working set is the sum of all
    of them (the D = 512, T = 16384 layer gradient: 2.0 GiB). This pass
    moves each `memref.dealloc` of a `memref.alloc` of the same block up to
    just after the last op of that block that uses the buffer or a view of
    it (a use inside a nested region counts at its ancestor in the block),
    so the allocator can reuse the memory for the buffers that follow.

    A buffer whose alias may escape the pass's sight stays where it is:
    one that a non-view op turns into another memref, a pointer or an index
    (`memref.extract_aligned_pointer_as_index`, a call that returns a
    memref), or that is yielded, returned or stored.

    Run on the CPU paths once the memref-level transformations are done
    (a GPU's `mgpuMemFree` waits for its stream, so an early free there
    would add host synchronisations).

    Before:

    ```mlir
    %a = memref.alloc() : memref<16xf32>
    linalg.fill ins(%c : f32) outs(%a : memref<16xf32>)
    %v = memref.subview %a[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
    linalg.copy ins(%v : memref<8xf32, strided<[1]>>) outs(%out : memref<8xf32>)
    %b = memref.alloc() : memref<16xf32>
    ...
    memref.dealloc %a : memref<16xf32>
    memref.dealloc %b : memref<16xf32>
    ```

    After:

    ```mlir
    %a = memref.alloc() : memref<16xf32>
    linalg.fill ins(%c : f32) outs(%a : memref<16xf32>)
    %v = memref.subview %a[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
    linalg.copy ins(%v : memref<8xf32, strided<[1]>>) outs(%out : memref<8xf32>)
    memref.dealloc %a : memref<16xf32>
    %b = memref.alloc() : memref<16xf32>
    ...
    ```
  }];
}

#endif // HKT_PASSES_TRANSFORMS_PASSES_TD
