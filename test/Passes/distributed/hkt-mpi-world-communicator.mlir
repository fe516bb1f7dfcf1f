// RUN: hkt-opt %s --convert-shard-to-mpi --hkt-mpi-world-communicator --canonicalize --split-input-file --verify-diagnostics | FileCheck %s

// The gradient sum of a data-parallel train step: after upstream's
// convert-shard-to-mpi it splits MPI_COMM_WORLD anew on every call; on a
// 1-D grid of all the ranks that communicator is the world's, used as is.
// The grid is gone, and with it the rank arithmetic of the split.

// CHECK-NOT: shard.grid
// CHECK-LABEL: func.func @sum_gradient
// CHECK-NOT: mpi.comm_split
// CHECK-NOT: mpi.comm_rank
// CHECK: %[[WORLD:.+]] = mpi.comm_world : !mpi.comm
// CHECK: mpi.allreduce(%{{.+}}, %{{.+}}, MPI_SUM, %[[WORLD]]) : memref<32xf32>, memref<32xf32>
// CHECK-NOT: mpi.comm_split
shard.grid @data_parallel(shape = 2)
func.func @sum_gradient(%g: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = shard.all_reduce %g on @data_parallel grid_axes = [0] reduction = sum : tensor<8x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

// A module without a grid is left as it is.
// CHECK-LABEL: func.func @no_grid
// CHECK-NEXT: return
func.func @no_grid(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// A 2-D grid's collectives run on sub-communicators, not the world.
// expected-error @below {{hkt-mpi-world-communicator: expected one 1-D grid spanning every rank, found 1 grid(s) of rank 2}}
shard.grid @grid2d(shape = 2x2)
func.func @two_axes(%g: tensor<8xf32>) -> tensor<8xf32> {
  %0 = shard.all_reduce %g on @grid2d grid_axes = [0] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
