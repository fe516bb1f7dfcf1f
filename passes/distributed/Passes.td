//===- Passes.td - data-parallel collectives ---------------*- tablegen -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The collectives of data-parallel training, after upstream's
// convert-shard-to-mpi: what this project adds to the shard -> mpi -> LLVM
// path of MLIR 22 (docs/training.md, "Several processes").
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_DISTRIBUTED_PASSES_TD
#define HKT_PASSES_DISTRIBUTED_PASSES_TD

include "mlir/Pass/PassBase.td"

def HktMpiWorldCommunicatorPass
    : Pass<"hkt-mpi-world-communicator", "::mlir::ModuleOp"> {
  let summary = "Use MPI_COMM_WORLD for a 1-D grid that spans every rank";
  let description = [{
    Runs after upstream's `convert-shard-to-mpi` on a module whose only grid
    is one-dimensional and that runs on exactly as many ranks as the grid has
    (a module of `hkt-compile --ranks N`: its manifest says N and the runtime
    refuses another count). `convert-shard-to-mpi` builds the communicator of
    every collective with `MPI_Comm_split(MPI_COMM_WORLD, color, key)`, one
    new communicator per collective and per call, never freed: a training
    run would create thousands. On such a grid the color is the same on
    every rank and the key is the rank itself, so the split communicator is
    the world's, member for member and in the same order; this pass uses
    the world's directly and removes the grid symbols, which nothing refers
    to after the conversion.

    Before:

    ```mlir
    shard.grid @data_parallel(shape = 2)
    %world = mpi.comm_world : !mpi.comm
    %retval, %rank = mpi.comm_rank(%world) : !mpi.retval, i32
    ...
    %comm = mpi.comm_split(%world, %c0_i32, %key) : !mpi.comm
    mpi.allreduce(%buf, %buf, MPI_SUM, %comm) : memref<64xf32>, memref<64xf32>
    ```

    After:

    ```mlir
    %world = mpi.comm_world : !mpi.comm
    mpi.allreduce(%buf, %buf, MPI_SUM, %world) : memref<64xf32>, memref<64xf32>
    ```

    A module with another grid (several axes, or several grids) is refused:
    its sub-communicators are not the world.
  }];
  let dependentDialects = ["::mlir::mpi::MPIDialect"];
}

def HktMpiSeparateAllreduceBuffersPass
    : Pass<"hkt-mpi-separate-allreduce-buffers", "::mlir::ModuleOp"> {
  let summary = "Send an all-reduce from its source, not from its receive buffer";
  let description = [{
    Runs after upstream's `convert-shard-to-mpi`, which lowers
    `shard.all_reduce %t` to a copy of `%t` into a new buffer and
    `mpi.allreduce(%buf, %buf, ...)`: the same buffer to send and to
    receive. MPI forbids that (only `MPI_IN_PLACE` may alias the receive
    buffer), and Open MPI refuses it at run time (`MPI_ERR_BUFFER: invalid
    buffer pointer`, which aborts the job). This pass sends from the copy's
    source instead, read-only, and drops the copy: the receive buffer is
    all written by the reduction.

    Before:

    ```mlir
    %src = bufferization.to_buffer %g : tensor<8x4xf32> to memref<8x4xf32>
    %buf = memref.alloc() : memref<8x4xf32>
    linalg.copy ins(%src : memref<8x4xf32>) outs(%buf : memref<8x4xf32>)
    %flat = memref.collapse_shape %buf [[0, 1]] : memref<8x4xf32> into memref<32xf32>
    mpi.allreduce(%flat, %flat, MPI_SUM, %comm) : memref<32xf32>, memref<32xf32>
    ```

    After:

    ```mlir
    %src = bufferization.to_buffer %g read_only : tensor<8x4xf32> to memref<8x4xf32>
    %buf = memref.alloc() : memref<8x4xf32>
    %flat = memref.collapse_shape %buf [[0, 1]] : memref<8x4xf32> into memref<32xf32>
    %send = memref.collapse_shape %src [[0, 1]] : memref<8x4xf32> into memref<32xf32>
    mpi.allreduce(%send, %flat, MPI_SUM, %comm) : memref<32xf32>, memref<32xf32>
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def HktConvertMpiToLLVMPass
    : Pass<"hkt-convert-mpi-to-llvm", "::mlir::ModuleOp"> {
  let summary = "Lower the mpi dialect to calls of the MPI library (Open MPI 4)";
  let description = [{
    Applies upstream's MPI -> LLVM patterns
    (`mpi::populateMPIToLLVMConversionPatterns`: the ABI of the
    implementation that the module's `mpi.dlti` names; a module without one
    gets `#dlti.map<"MPI:Implementation" = "OpenMPI">`, the runtime's),
    then gives the predefined reduction operations the names Open MPI 4
    exports: MLIR 22 refers to `MPI_SUM` as the global `@ompi_mpi_sum`, where
    Open MPI's `mpi.h` defines it as `&ompi_mpi_op_sum` (`ompi_mpi_sum` is in
    no Open MPI library: the module would not load).

    Runs beside the other conversions to LLVM, after
    `finalize-memref-to-llvm` (the buffers' descriptors).

    Before:

    ```mlir
    mpi.allreduce(%buf, %buf, MPI_SUM, %world) : memref<64xf32>, memref<64xf32>
    ```

    After (abridged):

    ```mlir
    llvm.mlir.global external @ompi_mpi_op_sum() : !llvm.struct<"ompi_predefined_op_t", opaque>
    %op = llvm.mlir.addressof @ompi_mpi_op_sum : !llvm.ptr
    %r = llvm.call @MPI_Allreduce(%ptr, %ptr, %n, %float, %op, %world) : (...) -> i32
    ```
  }];
  let dependentDialects = ["::mlir::DLTIDialect", "::mlir::LLVM::LLVMDialect"];
}

#endif // HKT_PASSES_DISTRIBUTED_PASSES_TD
