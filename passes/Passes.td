//===- Passes.td - hkt passes ------------------------------*- tablegen -*-===//

#ifndef HKT_PASSES_PASSES_TD
#define HKT_PASSES_PASSES_TD

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
    `hkt-lower-online-attention` turns into an `hkt.online_attention` that
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

def HktLowerOnlineAttentionPass : Pass<"hkt-lower-online-attention"> {
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

def HktGpuLowerOnlineAttentionPass : Pass<"hkt-gpu-lower-online-attention"> {
  let summary = "Lower hkt.online_attention to a gpu.launch (one block per query tile, head and batch row)";
  let description = [{
    The attention kernel of the NVVM path. `hkt.fused_attention` is first
    decomposed into `hkt.online_attention` and its normalisation, as for
    the CPU. Each `hkt.online_attention` (f32, static shapes) becomes one
    `gpu.launch`: the grid is (query tiles, heads, batch), a block has one
    thread per query row of its tile. For each key tile the block stages
    every level's keys and the values in workgroup memory (coalesced,
    zero past the end), computes each level >= 1's coarse score block
    (tile-q / f_l x tile-k / f_l) once, cooperatively, then every thread
    adds its row's level-0 scores to the coarse ones it covers and runs the
    online softmax and P V in registers, 16 keys per rescaling. Key tiles
    above the block's diagonal (causal) or past the batch row's key length
    are not visited; rows past the sequence compute and store nothing. The
    operands enter as `bufferization.to_buffer`, the results leave as
    `bufferization.to_tensor` of fresh buffers, so one-shot bufferization
    then runs as on the CPU path. tile-k, then tile-q, shrink until the
    shared arrays fit in a block's 48 KiB.

    `precision=tf32` puts Q0 K0^T and P V on the tensor cores
    (`gpu.subgroup_mma_*`, wmma m16n16k8, tf32 operands, f32
    accumulation): each warp owns 32 query rows and loads their level-0
    query fragments once (the queries padded to whole tiles with
    `tensor.pad`); the tile's scores and the accumulator live in workgroup
    memory, and between the two products each row's thread applies the
    coarse scores, the masks and the online softmax, writes P over its
    scores and rescales its accumulator row. It needs head widths that are
    multiples of 16 and tiles of whole warps and whole coarse rows.

    Before:

    ```mlir
    %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : ...) keys(%k0, %k1 : ...)
        values(%v : ...) outs(%a, %m, %s : ...) {causal = true, factors = array<i64: 1, 2>}
    ```

    After (abridged):

    ```mlir
    %qb0 = bufferization.to_buffer %q0 read_only : ...
    %out = memref.alloc() : memref<1x64x32xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c4, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)
               workgroup(%k0s : memref<32x8xf32, #gpu.address_space<workgroup>>, ...) {
      scf.for %e = %tx to %c256 step %c64 { ... memref.store %x, %k0s[...] }
      gpu.barrier
      ...
    }
    %acc = bufferization.to_tensor %out restrict writable : ...
    ```
  }];
  let options = [
    Option<"tileQ", "tile-q", "int64_t",
           /*default=*/"::mlir::hkt::kDefaultGpuTileQ",
           "Query rows (threads) per block">,
    Option<"tileK", "tile-k", "int64_t",
           /*default=*/"::mlir::hkt::kDefaultGpuTileK",
           "Keys per shared-memory tile (halved until the tiles fit)">,
    Option<"precision", "precision", "std::string", /*default=*/"\"f32\"",
           "f32 (SIMT) or tf32 (tensor cores for Q0 K0^T and P V)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HktGpuMapParallelLoopsPass : Pass<"hkt-gpu-map-parallel-loops"> {
  let summary = "Map each outermost host scf.parallel to a gpu.launch, one thread per iteration";
  let description = [{
    The rest of the layer on the NVVM path (projections, downsampling,
    hybrid head, normalisation) comes from `convert-linalg-to-parallel-loops`:
    an `scf.parallel` over the op's parallel dimensions with its reductions
    as `scf.for` inside. Each outermost `scf.parallel` outside a kernel
    becomes a one-dimensional `gpu.launch` of `block-size` threads per block
    over all its iterations, linearised innermost-fastest (neighbouring
    threads, neighbouring elements), guarded by the iteration count; an
    empty loop launches nothing. Upstream's `gpu-map-parallel-loops` maps
    only three dimensions to hardware ids and runs the others sequentially.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block (a multiple of 32)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect"];
}

def HktGpuHostStagingPass : Pass<"hkt-gpu-host-staging", "::mlir::ModuleOp"> {
  let summary = "Give every buffer the kernels touch a device allocation; copy the caller's buffers in and out";
  let description = [{
    Runs once every load and store of a function is inside a `gpu.launch`.
    Host `memref.alloc` / `memref.dealloc` become `gpu.alloc` /
    `gpu.dealloc`; each memref argument a kernel uses gets a device copy,
    filled with `gpu.memcpy` on entry if a kernel reads it and copied back
    before the return if one writes it; a `memref.get_global` a kernel reads
    is copied to the device. Entries keep the CPU calling convention (host
    buffers in and out). A load or store left on the host of a device buffer
    is an error. `gpu-async-region` then turns the copies, allocations and
    launches into one asynchronous chain.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect"];
}

def HktGpuEmulateOnCpuPass : Pass<"hkt-gpu-emulate-on-cpu", "::mlir::ModuleOp"> {
  let summary = "Run the NVVM path's kernels on the CPU: one OpenMP thread per GPU thread (a testing target)";
  let description = [{
    For `hkt-compile --target gpu-emulation`: replaces each `gpu.launch`
    (as `hkt-gpu-host-staging` leaves it) by a sequential loop over its
    blocks, each block an `omp.parallel` team of exactly as many threads as
    the block has (a kernel with no barrier and no warp-level op, whose
    threads are independent, by one `scf.parallel` over all blocks and
    threads instead), the thread ids from `omp_get_thread_num`, `gpu.barrier`
    as `omp.barrier`, the workgroup attributions as one stack buffer per
    launch; `gpu.alloc` / `gpu.memcpy` / `gpu.dealloc` become their memref
    forms; the warp-level matrix ops of the tensor-core kernel
    (`gpu.subgroup_mma_*`) work on a private copy of the whole fragment in
    each lane, their operands rounded to tf32. The kernel bodies are cloned
    unchanged otherwise, barriers and shared memory included, so the numerical tests check the IR the GPU runs
    against the float64 reference where no GPU is (docs/gpu.md).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::omp::OpenMPDialect",
                           "::mlir::scf::SCFDialect"];
}

def HktGpuAlignWorkgroupMemoryPass : Pass<"hkt-gpu-align-workgroup-memory"> {
  let summary = "Align every workgroup attribution of the kernels (llvm.align) for the tensor cores";
  let description = [{
    Kernel outlining keeps a launch's workgroup attributions without an
    alignment, and `convert-gpu-to-nvvm` then aligns each shared array to
    its element type (`.shared .align 4`). `wmma.load` / `wmma.store` need
    256-bit aligned fragment addresses, so this pass (run after outlining)
    sets `llvm.align` on every workgroup attribution of every `gpu.func`
    that has less; the NVVM lowering puts it on the shared array.

    ```mlir
    gpu.func @k() workgroup(%s : memref<16x16xf32, #gpu.address_space<workgroup>>) kernel
    // becomes
    gpu.func @k() workgroup(%s : memref<16x16xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64}) kernel
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"32",
           "Bytes (a power of two)">,
  ];
}

def HktCpuCodegenPass : Pass<"hkt-cpu-codegen", "::mlir::ModuleOp"> {
  let summary = "Tile and vectorise structured ops for the CPU (transform-dialect recipe library)";
  let description = [{
    Applies the CPU code-generation recipe of shared/TOOLCHAIN.md to the
    structured ops on memrefs (after bufferization) whose static f32 shapes
    it covers without remainders. The recipe is checked-in transform IR,
    `passes/recipes/cpu-codegen.mlir` (embedded at build time; diagnostics
    name `cpu-codegen.mlir:LINE`): one named sequence per class of op, tile
    sizes as `!transform.param<i64>` arguments. The pass sorts the ops into
    classes, takes their tile sizes from the per-target table of
    `passes/CpuTuning.h` for the vector width, and runs a small driver that
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
      alias ops folded), then `hkt-hoist-vector-accumulators` (every
      register tile's accumulator carried in registers across K, through
      views), then `@hkt_lower_vectors`: the outer-product contraction
      lowering, transfers lowered to 1-D.

    Then exp becomes a polynomial and vector add reductions are reassociated.

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
           "(passes/CpuTuning.h)">,
  ];
  let dependentDialects = ["::mlir::transform::TransformDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::ub::UBDialect"];
}

def HktHoistVectorAccumulatorsPass : Pass<"hkt-hoist-vector-accumulators"> {
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
    functions. A function that has callers is refused: its calls would
    need the sizes.

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

def HktDifferentiatePass : Pass<"hkt-differentiate", "::mlir::ModuleOp"> {
  let summary = "Generate the reverse-mode gradient function of hkt functions";
  let description = [{
    For each function named in `functions` (every public function when the
    list is empty), adds `<name>_grad`: the vector-Jacobian product of the
    function. It takes the function's arguments followed by one gradient per
    float tensor result (named `d<result>`: `dy` for a result named `y`), and
    returns the gradient of `sum_r <result_r, d<result_r>>` with respect to
    every float tensor argument, in argument order (named `d<argument>`:
    `dx`, `dwq`, ...). Integer arguments (key lengths) get none.

    The forward body is cloned into the gradient function (everything is
    recomputed), ops that implement no adjoint but `AggregatedOpInterface`
    are decomposed (`hkt.attention` into its SPEC steps), then every op from
    the last to the first builds its adjoint through `AdjointOpInterface`
    (each op its own; the pass knows no op by name), and gradients reaching a
    value more than once are summed with `linalg.add`. The function must be
    one block on ranked tensors of static shape.

    Before:

    ```mlir
    func.func @f(%q: tensor<1x4x2xf32>, %k: tensor<1x4x2xf32>) -> tensor<1x1x4x4xf32> {
      %e = tensor.empty() : tensor<1x1x4x4xf32>
      %s = hkt.level_scores ins(%q, %k : ...) outs(%e : ...) -> tensor<1x1x4x4xf32>
      return %s : tensor<1x1x4x4xf32>
    }
    ```

    After (the gradient function, abridged):

    ```mlir
    func.func @f_grad(%q: ..., %k: ..., %ds: tensor<1x1x4x4xf32> {hkt.name = "dresult0"})
        -> (tensor<1x4x2xf32> {hkt.name = "darg0"}, tensor<1x4x2xf32> {hkt.name = "darg1"}) {
      %s = hkt.level_scores ins(%q, %k : ...) outs(...)
      %scaled = linalg.generic ... // ds / sqrt(d)
      %dq = hkt.attend ins(%scaled, %k : ...) outs(...)
      %t = linalg.transpose ins(%scaled : ...) outs(...) permutation = [0, 1, 3, 2]
      %dk = hkt.attend ins(%t, %q : ...) outs(...)
      return %dq, %dk : ...
    }
    ```
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "Functions to differentiate (default: every public function)">,
    Option<"returnValues", "return-values", "bool", /*default=*/"false",
           "The gradient function also returns the function's results, "
           "first (value and gradient in one call)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // HKT_PASSES_PASSES_TD
