//===- Passes.td - CPU code generation ---------------------*- tablegen -*-===//

#ifndef HKT_PASSES_CODEGEN_CPU_PASSES_TD
#define HKT_PASSES_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def HktCpuLowerOnlineAttentionPass : Pass<"hkt-cpu-lower-online-attention"> {
  let summary = "Tile hkt.online_attention into a parallel loop nest over tiles";
  let description = [{
    Lowers `hkt.online_attention` to an `scf.forall` over (batch, head,
    query tile), parallel, and an `scf.for` over key tiles carrying the
    running max, sum and accumulator of the query tile. For each pair of
    tiles, the level-l score block (tile-q / f_l x tile-k / f_l) is computed
    once from the coarse query and key rows and broadcast into the
    tile-q x tile-k scores (SPEC 4). Queries, keys and values are first
    packed head-major so that every tile is one contiguous block, and when
    the factors form a divisibility chain (always, for stride^l) the keys
    inside a tile are reordered (values alike; softmax and P V do not depend
    on the key order) so that each broadcast copies contiguous row segments:
    blocks are built coarsest first, each one starting as the coarser block
    broadcast into it. Then come the causal and key-length masks (from each
    position's original key offset; key tiles wholly below the diagonal and
    inside the key length are visited by a first loop that skips them), the
    online softmax update and P V, all as small static linalg ops that
    vectorise. Key tiles wholly above the diagonal (causal) or past the
    row's key length are not visited. Sequences are zero-padded to whole
    tiles; padded keys are masked, padded queries dropped. Tile sizes are
    rounded up to a multiple of every level factor.

    Before:

    ```mlir
    %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : ...) keys(%k0, %k1 : ...)
        values(%v : ...) outs(%a, %m, %s : ...) {causal = true, factors = array<i64: 1, 2>}
    ```

    After (abridged):

    ```mlir
    %r:3 = scf.forall (%b, %h, %qt) in (1, 4, 16) shared_outs(%ao = %a, %mo = %m, %so = %s) {
      %t:3 = scf.for %kt = %c0 to %upper step %c1 iter_args(...) {
        %s1 = linalg.matmul ...  // q1 k1^T block, 32 x 32
        %i0 = scf.for ...        // copied into rows 2a, 2a+1, both halves
        %s0 = linalg.matmul ... outs(%i0 : tensor<64x64xf32>) // + q0 k0^T
        ...                      // mask, running max, exp, sum, P V
      }
      scf.forall.in_parallel { tensor.parallel_insert_slice ... }
    }
    ```
  }];
  let options = [
    Option<"tileQ", "tile-q", "int64_t",
           /*default=*/"::mlir::hkt::kDefaultTileQ",
           "Query rows per tile (rounded up to a multiple of every factor)">,
    Option<"tileK", "tile-k", "int64_t",
           /*default=*/"::mlir::hkt::kDefaultTileK",
           "Key columns per tile (rounded up to a multiple of every factor)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HktCpuCodegenPass : Pass<"hkt-cpu-codegen", "::mlir::ModuleOp"> {
  let summary = "Tile and vectorise structured ops for the CPU (transform-dialect recipe library)";
  let description = [{
    Applies the CPU code-generation recipe of shared/TOOLCHAIN.md to the
    structured ops on memrefs (after bufferization) whose static f32 shapes
    it covers without remainders. The recipe is checked-in transform IR,
    `passes/codegen/cpu/recipes/cpu-codegen.mlir` (embedded at build time; diagnostics
    name `cpu-codegen.mlir:LINE`): one named sequence per class of op, tile
    sizes as `!transform.param<i64>` arguments. The pass sorts the ops into
    classes, takes their tile sizes from the per-target table of
    `passes/codegen/cpu/CpuTuning.h` for the vector width, and runs a small driver that
    includes each class's sequence for each of its ops:

    - `@hkt_gemm`, a whole `linalg.matmul`: an `scf.forall` over 64-row
      blocks (threads), cache tiles [N 512, K 256] with the K loop outside
      N, a register tile of 8 rows x 2 vectors (16 accumulators; 8 x 32 f32
      with AVX-512) or 6 rows x 2 vectors with 16 registers (12
      accumulators, 6 x 16 with AVX2), visited column panel by column
      panel, K step 4, vectorised; `@hkt_gemm_split` when the register
      tile's rows do not divide the block's (64 = 60 rows of 6-row tiles +
      one 4-row tile). A right operand whose rows lie a multiple of 1 KiB
      apart is first copied into rows one cache line longer (the panel a
      register tile streams otherwise maps onto two L1 sets);
    - `@hkt_tile_gemm` (`@hkt_tile_gemm_split`), a matmul inside a loop
      nest (attention tiles): register tiles only;
    - `@hkt_rows_<rank>d`, the small elementwise and row ops of the tiles
      (up to any rank the library has, when every operand is read along
      the innermost loop): one row at a time; `@hkt_whole`, 1-D ops;
    - `@hkt_split`, ops outside the loop nests (downsampling, the hybrid
      head, packing, normalisation): split across threads along their first
      parallel loop of at least 64 iterations; the elementwise ones among
      them (generics and fills whose rows are contiguous in every operand)
      are then vectorised row by row, the others (convolutions, transposes,
      copies) keep their scalar bodies;
    - `@hkt_prepare_vectors` on every function (contractions recovered,
      alias ops folded), then `hkt-cpu-hoist-vector-accumulators` (every
      register tile's accumulator carried in registers across K, through
      views), then `@hkt_lower_vectors`: the outer-product contraction
      lowering, transfers lowered to 1-D.

    Then exp becomes a polynomial, vector add reductions are reassociated,
    and maximumf reductions (the softmax's row maxima) become halvings by
    `arith.cmpf ogt` + `arith.select` (x86's vmaxps) with the accumulator
    combined by maximumf: a NaN score may be left out of the maximum, but
    exp and the row sum still carry it into the row's output.

    Before:

    ```mlir
    linalg.matmul ins(%a, %b : memref<1024x512xf32>, memref<512x512xf32>)
                  outs(%c : memref<1024x512xf32>)
    ```

    After (abridged):

    ```mlir
    scf.forall (%i) in (16) {
      scf.for %n0 ... step 256 { scf.for %i1 ... step 8 { scf.for %n1 ... step 32 {
        %acc = vector.transfer_read %c[...] : memref<1024x512xf32>, vector<8x32xf32>
        %r = scf.for %k ... iter_args(%a0 = %acc) -> (vector<8x32xf32>) {
          ... 8 x vector.fma : vector<32xf32>
        }
        vector.transfer_write %r, %c[...]
      } } }
    }
    ```
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "int64_t",
           /*default=*/"::mlir::hkt::kDefaultVectorBits",
           "Width of the target's vector registers in bits (512 for AVX-512, "
           "256 for AVX2); selects the entry of the tuning table "
           "(passes/codegen/cpu/CpuTuning.h)">,
    Option<"regRows", "register-rows", "int64_t", /*default=*/"0",
           "Rows of a matmul's register tile (0: the tuning table's)">,
    Option<"regVectors", "register-vectors", "int64_t", /*default=*/"0",
           "Columns of a matmul's register tile in vectors (0: the tuning "
           "table's)">,
  ];
  let dependentDialects = ["::mlir::transform::TransformDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::ub::UBDialect"];
}

def HktCpuHoistVectorAccumulatorsPass : Pass<"hkt-cpu-hoist-vector-accumulators"> {
  let summary = "Carry a loop-invariant vector.transfer_read/transfer_write pair through an scf.for (matmul accumulators in registers)";
  let description = [{
    For every `scf.for` (innermost first), a `vector.transfer_read` and the
    `vector.transfer_write` after it in the loop body that access the same
    loop-invariant buffer, indices, vector type and permutation map, without
    masks, become a read before the loop, a loop-carried vector and a write
    after it, when no other op in the loop may touch memory the buffer
    shares. That is the K loop of a register tile: its accumulators stay in
    registers for the whole reduction instead of being loaded and stored once
    per K step.

    Upstream's `hoist_redundant_vector_transfers` does the same rewrite but
    refuses whenever the buffer is or has a view anywhere in the function.
    Here buffers are traced through their views (`ViewLikeOpInterface`) to
    the buffer they come from: distinct allocations, globals and function
    arguments never overlap (nothing passes one buffer as two arguments when
    one of them is written: the runtime gives each argument its own buffer,
    and one-shot bufferization copies at calls), views of the same one may.
    Ops with unknown memory effects block the hoisting.

    Before:

    ```mlir
    scf.for %k = %c0 to %c64 step %c4 {
      %acc = vector.transfer_read %c[%i, %j], %pad {in_bounds = [true, true]}
          : memref<64x64xf32>, vector<4x16xf32>
      %a = vector.transfer_read %a[%i, %k], ...
      %r = vector.contract ... %a, %b, %acc
      vector.transfer_write %r, %c[%i, %j] {in_bounds = [true, true]}
    }
    ```

    After:

    ```mlir
    %acc0 = vector.transfer_read %c[%i, %j], %pad ...
    %r = scf.for %k = %c0 to %c64 step %c4 iter_args(%acc = %acc0) -> (vector<4x16xf32>) {
      ...
      scf.yield %next : vector<4x16xf32>
    }
    vector.transfer_write %r, %c[%i, %j] ...
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def HktCpuAmxMatmulPass : Pass<"hkt-cpu-amx-matmul"> {
  let summary = "linalg.matmul on f32 buffers -> Intel AMX tiles: bf16 operands, f32 accumulation";
  let description = [{
    `hkt-compile --precision bf16` on a CPU with AMX (Sapphire Rapids and
    later): every `linalg.matmul` on f32 buffers with contiguous rows, N a
    multiple of 16 and K of 16 (of 512 above 512; padded with zeros to a
    multiple of 32 below), static but for M, which a matmul in a parallel
    loop must have static and a multiple of 16
    becomes `amx.tile_mulf` (tdpbf16ps) on 16 x 16 f32 accumulator tiles,
    2 x 2 at once where M and N allow. The left operand is rounded to bf16
    (round to nearest even), the right one rounded into AMX's
    pair-interleaved layout, `[K/2, 2N]` with row r holding `B[2r, n]` and
    `B[2r + 1, n]` side by side; the products are exact in f32 and summed in
    f32, so the error is that of rounding the operands (2^-8 relative each).
    Inside a parallel loop (the attention's tiles), an operand that is a
    view of a buffer defined outside the loop and written nowhere in it (the
    packed queries, keys and values) is read from a bf16 copy of the whole
    buffer made once before the loop (in pairs for right operands, read from
    rows that are provably even: constants, and loops starting and stepping
    evenly), freed after it; the others (the probabilities P) are rounded
    in the loop into copies on the stack, allocated at the start of the
    parallel body. A matmul outside one (a
    projection) rounds its right operand once into a heap buffer and its
    rows in parallel blocks of 64 (`scf.forall`), the rows past the last
    whole block (M not a multiple of it, or known at run time only) through
    a zero-padded block of their own. A matmul in a parallel loop whose C
    a `linalg.fill` of +0.0 has just written (an attention tile's scores)
    starts its accumulators with `amx.tile_zero` and the fill goes (a whole
    matmul keeps its fill: dropping it there measured HKT slower, within the
    noise). Other matmuls (other shapes,
    transposed maps, dynamic K or N) stay f32. Runs after bufferization and
    before `hkt-cpu-codegen`, which then vectorises what is left.

    Before:

    ```mlir
    linalg.matmul ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>)
                  outs(%c : memref<64x64xf32>)
    ```

    After (abridged, inside a parallel loop):

    ```mlir
    scf.forall ... {
      %a16 = memref.alloca() : memref<64x64xbf16>
      %b16 = memref.alloca() : memref<32x128xbf16>
      ...
      scf.for ... { vector.load %a ... arith.truncf ... vector.store %a16 }
      scf.for ... { ... vector.interleave %even, %odd ... vector.store %b16 }
      scf.for %i ... step 32 { scf.for %j ... step 32 {
        %c00 = amx.tile_load %c[%i, %j] : memref<64x64xf32> into !amx.tile<16x16xf32>
        ...
        %a0 = amx.tile_load %a16[%i, %c0] : memref<64x64xbf16> into !amx.tile<16x32xbf16>
        %b0 = amx.tile_load %b16[%c0, %j2] : memref<32x128xbf16> into !amx.tile<16x32xbf16>
        %d00 = amx.tile_mulf %a0, %b0, %c00 : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
        ...
        amx.tile_store %c[%i, %j], %d00 : memref<64x64xf32>, !amx.tile<16x16xf32>
      } }
    }
    ```
  }];
  let dependentDialects = ["::mlir::amx::AMXDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def HktCpuAvx512Bf16MatmulPass : Pass<"hkt-cpu-avx512bf16-matmul"> {
  let summary = "linalg.matmul on f32 buffers -> AVX512-BF16 dot products: bf16 operands, f32 accumulation";
  let description = [{
    `hkt-compile --precision bf16` on a CPU with AVX512-BF16 but no AMX
    (AMD Zen 4 and 5, Intel Cooper Lake; `--cpu-features=-amx-tile`
    elsewhere): the matmuls of `hkt-cpu-amx-matmul`'s shapes, with the same
    operand rounding (the left operand to bf16 rows, the right one into the
    pair-interleaved layout `[K/2, 2N]`, read-only operands of a parallel
    loop rounded once before it, whole matmuls in parallel blocks of rows)
    and the same error bound (that of rounding the operands, 2^-8 relative
    each; products exact in f32, sums in f32), multiplied by
    `x86vector.avx512.dot` (vdpbf16ps): a register tile of 8 rows x 2
    vectors of 16 f32 accumulators, loaded from C, carried through a loop
    over K's pairs and stored once; each step broadcasts a row's pair
    `A[i, 2p:2p+2]` as one 32-bit value and loads 16 column pairs of the
    right operand's pair row p. K needs no chunking here (any multiple of
    16). A zero-filled C in a parallel loop starts from zero vectors, its
    fill dropped, as in `hkt-cpu-amx-matmul`. Runs after bufferization and
    before `hkt-cpu-codegen`.

    After (abridged):

    ```mlir
    scf.for %i = %c0 to %c64 step %c8 {
      scf.for %j = %c0 to %c64 step %c32 {
        %c00 = vector.load %c[%i, %j] : memref<64x64xf32>, vector<16xf32>
        ...
        %r:16 = scf.for %p = %c0 to %c32 step %c1 iter_args(%acc0 = %c00, ...) {
          %b0 = vector.load %b16[%p, %j2] : memref<32x128xbf16>, vector<32xbf16>
          %pair = vector.load %a16[%i, %k] : memref<64x64xbf16>, vector<2xbf16>
          %word = vector.extract (vector.bitcast %pair : vector<2xbf16> to vector<1xi32>)[0]
          %a = vector.bitcast (vector.broadcast %word : i32 to vector<16xi32>) : ... to vector<32xbf16>
          %d0 = x86vector.avx512.dot %acc0, %a, %b0 : vector<32xbf16> -> vector<16xf32>
          ...
        }
        vector.store %r#0, %c[%i, %j] : memref<64x64xf32>, vector<16xf32>
        ...
      }
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::x86vector::X86VectorDialect"];
}

def HktCpuLoopBuffersToStackPass : Pass<"hkt-cpu-loop-buffers-to-stack"> {
  let summary = "Buffers allocated and freed in each iteration of a sequential loop inside a parallel one -> one stack buffer per parallel iteration";
  let description = [{
    A `memref.alloc` of static shape (no layout) inside an `scf.for` or
    `scf.while` that runs in the body of an `scf.parallel` or `scf.forall`,
    freed by one `memref.dealloc` in its own block, lives within one
    iteration of the loops around it: every iteration can take the same
    memory. It becomes a `memref.alloca` at the start of the parallel body,
    and its dealloc goes; up to 256 KiB of them per parallel body (OpenMP
    workers have stacks of a few MiB); the rest stay on the heap.
    `convert-scf-to-openmp` gives each parallel iteration an alloca scope,
    which frees the stack buffers. In the fused pipeline that is the
    attention's score tile and row statistics: three mallocs and frees per
    key tile before (~1-2% of the layer's samples in `malloc` / `_int_free`).
    Runs after `hkt-cpu-codegen` and `scf.forall` -> `scf.parallel`.

    Upstream's `promote-buffers-to-stack` puts the alloca where the alloc
    was, inside the sequential loop, where the stack would grow on every
    iteration. `buffer-loop-hoisting` (which stops at `scf.forall`) must run
    before the deallocations are placed; tried right after one-shot
    bufferization in this pipeline, it left these buffers in the key loop,
    and it would keep them on the heap.

    Before:

    ```mlir
    scf.parallel (%q) = (%c0) to (%c64) step (%c1) {
      scf.for %k = %c0 to %c64 step %c1 {
        %s = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
        ...
        memref.dealloc %s : memref<64x64xf32>
      }
    }
    ```

    After:

    ```mlir
    scf.parallel (%q) = (%c0) to (%c64) step (%c1) {
      %s = memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
      scf.for %k = %c0 to %c64 step %c1 {
        ...
      }
    }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

#endif // HKT_PASSES_CODEGEN_CPU_PASSES_TD
