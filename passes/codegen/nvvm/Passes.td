//===- Passes.td - NVVM code generation --------------------*- tablegen -*-===//

#ifndef HKT_PASSES_CODEGEN_NVVM_PASSES_TD
#define HKT_PASSES_CODEGEN_NVVM_PASSES_TD

include "mlir/Pass/PassBase.td"

def HktNvvmLowerOnlineAttentionPass : Pass<"hkt-nvvm-lower-online-attention"> {
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

    `precision=bf16` builds the FlashAttention-2 kernels (docs/gpu.md):
    `attention_fwd` (mma.sync m16n8k16, fragments by ldmatrix, K0 and V
    converted to bf16 first and their tiles double-buffered with cp.async,
    the group points marked for `hkt-nvvm-async-copy-groups`) and, for
    `hkt.online_attention_backward`, `attention_bwd_dkdv` and
    `attention_bwd_dq`.

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
           "f32 (SIMT), tf32 (wmma for Q0 K0^T and P V) or bf16 (the "
           "FlashAttention-2 kernel attention_fwd on mma.sync)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect"];
}

def HktNvvmLowerBf16MmaPass : Pass<"hkt-nvvm-lower-bf16-mma"> {
  let summary = "nvgpu.mma.sync on bf16 -> nvvm.mma.sync (upstream's conversion has no bf16)";
  let description = [{
    The bf16 attention kernels multiply with `nvgpu.mma.sync` m16n8k16
    (bf16 A and B, f32 accumulators): a pure op on vectors, which
    bufferization and buffer deallocation see through. Upstream's
    `convert-nvgpu-to-nvvm` fails on it ("failed to deduce operand PTX
    types", ../shared/gpu/PROBES.md), so this pass, run after
    bufferization on the NVVM and the emulation paths alike, repacks the
    operands into the i32 registers of `nvvm.mma.sync` (each row of the
    vector<N x 2 x bf16> operand one register, low half the lower column)
    and the result struct into the accumulator vector.

    ```mlir
    %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]}
        : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
    // becomes
    %r = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%c0, %c1, %c2, %c3]
        {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
         multiplicandAPtxType = #nvvm.mma_type<bf16>,
         multiplicandBPtxType = #nvvm.mma_type<bf16>,
         shape = #nvvm.shape<m = 16, n = 8, k = 16>}
        : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::vector::VectorDialect"];
}

def HktNvvmAsyncCopyGroupsPass : Pass<"hkt-nvvm-async-copy-groups"> {
  let summary = "Materialise the cp.async commit and wait points the kernels mark on their barriers";
  let description = [{
    The bf16 attention kernels stage key and value tiles with
    `nvgpu.device_async_copy` (cp.async). Its group ops
    (`nvgpu.device_async_create_group`, `nvgpu.device_async_wait`) declare
    no memory effects, which buffer deallocation refuses, so the kernels
    are built with the points marked on the `gpu.barrier` that follows
    each: `hkt.cp_async_commit` (close the thread's copies into a group)
    or `hkt.cp_async_wait = N` (close them, then wait until at most N
    groups are pending). Run after bufferization, this pass puts the group
    ops before those barriers and drops the marks:

    ```mlir
    gpu.barrier {hkt.cp_async_wait = 1 : i32}
    // becomes
    %g = nvgpu.device_async_create_group
    nvgpu.device_async_wait %g {numGroups = 1 : i32}
    gpu.barrier
    ```
  }];
  let dependentDialects = ["::mlir::nvgpu::NVGPUDialect"];
}

def HktNvvmDynamicSharedMemoryPass : Pass<"hkt-nvvm-dynamic-shared-memory"> {
  let summary = "Move the shared arrays of launches above 48 KiB to dynamic shared memory";
  let description = [{
    A block's static shared memory stops at 48 KiB; more needs dynamic
    shared memory, which the launch asks for and the runtime opts the
    kernel in to (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, checked
    against the device's limit). For every `gpu.launch` whose workgroup
    attributions add up to more than 48 KiB (the bf16 attention kernels at
    head width 256), the attributions become `memref.view`s of
    `gpu.dynamic_shared_memory` at 128-byte aligned offsets and the launch
    gets `dynamic_shared_memory_size` of their total. Launches within
    48 KiB are left alone; more than 99 KiB (what every chip from sm_80 on
    allows) is an error.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect"];
}

def HktNvvmLowerGemmPass : Pass<"hkt-nvvm-lower-gemm"> {
  let summary = "linalg.matmul on memrefs -> a bf16 tensor-core GEMM kernel (mma.sync m16n8k16)";
  let description = [{
    The projections and their gradients on the NVVM path with
    `--precision bf16`: every `linalg.matmul` outside a kernel whose
    operands are static f32 memrefs of rank 2 with the default indexing
    maps becomes one `gpu.launch` named `gemm_bf16_MxNxK_I`: blocks of 4
    warps per 64 x 64 tile of C, A and B staged in shared memory as bf16
    32 columns of K at a time (zero past the edges, so any size works),
    fragments by `ldmatrix`, `nvgpu.mma.sync` m16n8k16 with f32
    accumulators, and `C += A B` at the end (the matmul's semantics).
    Where C is a fresh `memref.alloc` that nothing touches before the
    matmul but a zero `linalg.fill` (every projection), the fill is
    absorbed: the kernel stores `C = A B` and never reads C. Other
    matmuls keep the one-thread-per-element path.

    With `cublas-lt` (the NVVM pipeline), the launch is the fallback: the
    host first calls `hktCublasLtGemmBf16(A, B, C)` (a function the
    runtime provides, marked `hkt.device_call`), which runs `C += A B` on
    cuBLASLt (opened at run time; bf16 tensor cores on the f32 buffers),
    or `hktCublasLtGemmBf16Overwrite(A, B, C)` (`C = A B`, beta = 0) where
    the zero fill was absorbed,
    and returns 0 where cuBLASLt is missing or cannot take the layout;
    the kernel is launched only then. The emulation has no cuBLASLt.
  }];
  let options = [
    Option<"cublasLt", "cublas-lt", "bool", /*default=*/"false",
           "Try cuBLASLt (through the runtime) before the own kernel">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def HktNvvmHostLoopsInOrderPass : Pass<"hkt-nvvm-host-loops-in-order"> {
  let summary = "Run the host's scf.forall loops in order (scf.for over tensors): their kernels launch one after another";
  let description = [{
    A model's batched entries run their row function on every row in an
    `scf.forall` (docs/design.md): on the CPU each row is an OpenMP task.
    On the GPU the host only launches kernels, in stream order, and the
    parallelism is inside them; so after the row functions are inlined,
    every `scf.forall` outside a kernel becomes nested `scf.for` loops with
    the shared outputs as iteration arguments, each
    `tensor.parallel_insert_slice` an `tensor.insert_slice` into the
    running value. The iterations of an `scf.forall` are independent and
    write disjoint slices, so running them in order gives the same result;
    sums over the rows keep their order (the same additions as on the CPU).
    Upstream's `scf-forall-to-for` (MLIR 22) crashes on loops with shared
    outputs, which these are.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HktNvvmFuseElementwisePass : Pass<"hkt-nvvm-fuse-elementwise"> {
  let summary = "Fuse chains of element-wise linalg.generic ops on tensors into one (one kernel each chain), keeping their kernel names";
  let description = [{
    On the GPU path every host linalg op becomes a kernel of its own
    (`hkt-nvvm-map-parallel-loops`), so a chain of element-wise ops costs a
    launch and a round trip through device memory per link. This pass runs
    upstream's element-wise fusion (`linalg::fuseElementwiseOps`, the
    rewrite of `linalg-fuse-elementwise-ops`) on tensors, before
    bufferization, restricted to what keeps the rest of the path intact:

    - producer and consumer are both `linalg.generic` (named ops such as
      `linalg.matmul`, `linalg.fill` and `linalg.transpose` keep their own
      lowerings: the GEMM kernel, the zero fill);
    - the producer has one use, so nothing is computed twice;
    - no reshape propagation (upstream's pass also folds reshapes by
      expansion, which turns the projections' matmuls into generics).

    The fused op keeps the consumer's `hkt.kernel` tag, or the producer's
    if the consumer has none, so the kernel is still named for what it
    computes.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def HktNvvmMapParallelLoopsPass : Pass<"hkt-nvvm-map-parallel-loops"> {
  let summary = "Map each host linalg op and outermost scf.parallel to a named gpu.launch";
  let description = [{
    What the NVVM path has not given a kernel of its own (downsampling,
    hybrid head, normalisation, projections outside bf16, their gradients)
    arrives as linalg ops on memrefs. Each becomes one `gpu.launch` whose
    function is named for what it computes: the op's `hkt.kernel` tag (set
    where hkt ops are lowered or differentiated: `downsample`,
    `downsample_grad`, ...) or its kind (`fill`, `transpose`, `elementwise`,
    `reduce`, ...), then `_N`.

    A sum (a `linalg.generic` yielding `out + x`, e.g. the gradient of a
    weight summed over batch and time) keeps its reduction inside the
    kernel wherever its loops stand; from 64 terms on it gets a warp per
    output element: lanes stride the reduction, xor shuffles add the
    partial sums, lane 0 adds the total into the output (or stores it,
    where the output is a fresh buffer only zero-filled before the sum:
    the fill is absorbed, as hkt-nvvm-lower-gemm does). Anything else goes
    through upstream's `linalg-to-parallel-loops` (an `scf.parallel` over
    the parallel dimensions, reductions as `scf.for` inside); each such
    loop, and each outermost `scf.parallel` already in the input, becomes
    a one-dimensional launch of `block-size` threads per block over all
    its iterations, linearised innermost-fastest (neighbouring threads,
    neighbouring elements), guarded by the iteration count; an empty loop
    launches nothing. Upstream's `gpu-map-parallel-loops` maps only three
    dimensions to hardware ids and runs the others sequentially.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block (a multiple of 32)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def HktNvvmFuseIndependentLaunchesPass : Pass<"hkt-nvvm-fuse-independent-launches"> {
  let summary = "Fuse runs of consecutive gpu.launch ops of one kind that touch disjoint buffers into one launch (horizontal fusion)";
  let description = [{
    A run of consecutive `gpu.launch` ops with the same kernel name up to
    its number (`adamw_720`, `adamw_721`, ...), a static one-dimensional
    grid, the same block size, no shared memory, and no buffer that one
    writes and another reads or writes, becomes one launch over the sum of
    their grids: block b runs the first body while b < G0, the second as
    block b - G0 while b < G0 + G1, and so on. Only ops free of memory
    effects or that only allocate their result may stand between them (they
    move above the fused launch). Buffers are told apart by their root (an allocation, a function
    argument, a global), so function arguments are taken not to alias, as
    one-shot bufferization does. A run stops before its kernel's parameters
    would pass 4096 bytes (PTX before ISA 8.1 allows 4352; a memref
    descriptor takes (3 + 2 rank) 8-byte words). The AdamW update of the
    parameters becomes one kernel per 4 KiB of descriptors (a multi-tensor
    apply); the per-parameter accumulations after each row of a batch, a
    few kernels per row.
    `kinds` restricts the pass to those kernel names (all when empty).
  }];
  let options = [
    ListOption<"kinds", "kinds", "std::string",
               "Kernel names (without their number) to fuse; all if empty">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect"];
}

def HktNvvmHostStagingPass : Pass<"hkt-nvvm-host-staging", "::mlir::ModuleOp"> {
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

def HktNvvmAllreduceToNcclPass
    : Pass<"hkt-nvvm-allreduce-to-nccl", "::mlir::ModuleOp"> {
  let summary = "A data-parallel train step's all-reduce on device memory through the runtime's NCCL";
  let description = [{
    Runs after `hkt-nvvm-host-staging` on the NVVM path of a module compiled
    with `hkt-compile --ranks N` (docs/training.md, "Several GPUs"). The
    gradient sum that upstream's `convert-shard-to-mpi` lowered to
    `mpi.allreduce` now reads and writes device buffers, which an MPI that
    is not CUDA-aware cannot touch: each `mpi.allreduce` over the world
    communicator becomes a call of the runtime's `hktNcclAllReduceF32(send,
    recv, ncclRedOp_t)` (contiguous 1-D f32 buffers), which runs
    `ncclAllReduce` on the communicator the runtime built over the MPI job
    (rank 0's `ncclUniqueId` broadcast with MPI) and waits for it. The call
    carries `hkt.device_call`, so `gpu-async-region` waits for the stream
    before it. The world's handle and the rank that `convert-shard-to-mpi`
    also emits are removed with their dead users; another MPI operation,
    communicator or reduction (MINLOC, the logical ones) is an error. The
    emulation keeps `mpi.allreduce`: its device memory is host memory.

    Before:

    ```mlir
    %world = mpi.comm_world : !mpi.comm
    mpi.allreduce(%grads, %sums, MPI_SUM, %world) : memref<12626xf32>, memref<12626xf32>
    ```

    After:

    ```mlir
    func.func private @hktNcclAllReduceF32(memref<?xf32, strided<[1], offset: ?>>,
        memref<?xf32, strided<[1], offset: ?>>, i32) attributes {hkt.device_call}
    %send = memref.cast %grads : memref<12626xf32> to memref<?xf32, strided<[1], offset: ?>>
    %recv = memref.cast %sums : memref<12626xf32> to memref<?xf32, strided<[1], offset: ?>>
    %sum = arith.constant 0 : i32
    call @hktNcclAllReduceF32(%send, %recv, %sum) : (...) -> ()
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::mpi::MPIDialect"];
}

def HktNvvmEmulateOnCpuPass : Pass<"hkt-nvvm-emulate-on-cpu", "::mlir::ModuleOp"> {
  let summary = "Run the NVVM path's kernels on the CPU, each block's threads as loops between barriers (a testing target)";
  let description = [{
    For `hkt-compile --target gpu-emulation`: replaces each `gpu.launch`
    (as `hkt-nvvm-host-staging` leaves it) by a call to a private host
    function named for the kernel, in which the blocks are one
    `scf.parallel` (OpenMP work-sharing later) and each block runs on one OS
    thread as MCUDA does it: the ops between two barriers are one `scf.for`
    over the block's threads. A barrier under `scf.for` or `scf.if` makes
    that op run once for the block, its loop-carried values and results
    per-thread buffers, its bounds or condition thread 0's, checked against
    every other thread's at run time (`cf.assert`: on a GPU, threads that
    disagree would not meet at the barrier). A value used past a barrier is
    recomputed there when it is cheap and pure (index arithmetic, views,
    constants) and otherwise kept in a per-thread buffer; the threads'
    private buffers become one slice per thread. Workgroup memory and those
    buffers are heap buffers of each block. A kernel with no barrier and no
    warp-level op is one `scf.parallel` over all blocks and threads.
    `gpu.alloc` / `gpu.memcpy` / `gpu.dealloc` become their memref forms.

    The warp-level matrix ops of the f32/tf32 kernel (`gpu.subgroup_mma_*`)
    work on a private copy of the whole fragment in lane 0, their operands
    rounded to tf32; those of the bf16 kernels (`nvgpu.ldmatrix`,
    `nvvm.mma.sync`, `gpu.shuffle`) per lane through an exchange buffer, by
    the PTX ISA's fragment maps. The kernel bodies are cloned unchanged
    otherwise, barriers and shared memory included, so the numerical tests
    check the IR the GPU runs against the float64 reference where no GPU is
    (docs/gpu.md).

    With `os-threads`, the former scheme: the blocks one after another, each
    an `omp.parallel` team of one OS thread per GPU thread (ids from
    `omp_get_thread_num`, `gpu.barrier` as `omp.barrier`). The same results;
    several times slower, since every barrier wakes every thread.
  }];
  let options = [
    Option<"osThreads", "os-threads", "bool", /*default=*/"false",
           "Run each GPU thread as an OS thread of an OpenMP team per block">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::omp::OpenMPDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def HktNvvmMergeEquivalentKernelsPass
    : Pass<"hkt-nvvm-merge-equivalent-kernels", "::mlir::ModuleOp"> {
  let summary = "One gpu.module per distinct kernel body: launches of the same kernel share it";
  let description = [{
    After `gpu-kernel-outlining` every launch has a kernel in a `gpu.module`
    of its own, so a kernel launched at several places (the bf16 GEMM of
    every projection of one shape, a fill, a copy) would be compiled,
    assembled and loaded once per place. Of the modules whose one kernel is
    the same op for op (its name aside) and whose other ops are the same,
    the first is kept, every `gpu.launch_func` of the others points at its
    kernel, and they are erased.

    ```mlir
    gpu.launch_func @fill_1::@fill_1 ...   // fill_1 and fill_4: one body
    gpu.launch_func @fill_4::@fill_4 ...
    // becomes
    gpu.launch_func @fill_1::@fill_1 ...
    gpu.launch_func @fill_1::@fill_1 ...   // gpu.module @fill_4 erased
    ```
  }];
}

def HktNvvmAlignWorkgroupMemoryPass : Pass<"hkt-nvvm-align-workgroup-memory"> {
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
    Option<"alignment", "alignment", "int64_t",
           /*default=*/"::mlir::hkt::NvvmTargetInfo::kMmaFragmentAlignment",
           "Bytes (a power of two)">,
  ];
}

#endif // HKT_PASSES_CODEGEN_NVVM_PASSES_TD
