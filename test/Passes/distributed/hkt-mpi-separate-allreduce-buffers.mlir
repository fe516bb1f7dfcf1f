// RUN: hkt-opt %s --convert-shard-to-mpi --hkt-mpi-separate-allreduce-buffers --split-input-file --verify-diagnostics | FileCheck %s

// convert-shard-to-mpi gives MPI_Allreduce one buffer to send and receive
// (Open MPI: MPI_ERR_BUFFER); the pass sends from the copy's source, made
// read-only, and drops the copy. 2-D: both sides through their 1-D views.

// CHECK-LABEL: func.func @sum_matrix
// CHECK-SAME: (%[[G:.+]]: tensor<8x4xf32>)
// CHECK: %[[SRC:.+]] = bufferization.to_buffer %[[G]] read_only : tensor<8x4xf32> to memref<8x4xf32>
// CHECK: %[[BUF:.+]] = memref.alloc() : memref<8x4xf32>
// CHECK-NOT: linalg.copy
// CHECK: %[[RECV:.+]] = memref.collapse_shape %[[BUF]] {{\[\[}}0, 1]] : memref<8x4xf32> into memref<32xf32>
// CHECK: %[[SEND:.+]] = memref.collapse_shape %[[SRC]] {{\[\[}}0, 1]] : memref<8x4xf32> into memref<32xf32>
// CHECK: mpi.allreduce(%[[SEND]], %[[RECV]], MPI_SUM, %{{.+}}) : memref<32xf32>, memref<32xf32>
// CHECK: bufferization.to_tensor %[[BUF]]
shard.grid @data_parallel(shape = 2)
func.func @sum_matrix(%g: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = shard.all_reduce %g on @data_parallel grid_axes = [0] reduction = sum : tensor<8x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

// 1-D: the buffers themselves.
// CHECK-LABEL: func.func @sum_vector
// CHECK-SAME: (%[[G:.+]]: tensor<16xf32>)
// CHECK: %[[SRC:.+]] = bufferization.to_buffer %[[G]] read_only
// CHECK: %[[BUF:.+]] = memref.alloc() : memref<16xf32>
// CHECK-NOT: linalg.copy
// CHECK: mpi.allreduce(%[[SRC]], %[[BUF]], MPI_SUM, %{{.+}}) : memref<16xf32>, memref<16xf32>
shard.grid @data_parallel(shape = 2)
func.func @sum_vector(%g: tensor<16xf32>) -> tensor<16xf32> {
  %0 = shard.all_reduce %g on @data_parallel grid_axes = [0] reduction = sum : tensor<16xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// One buffer for both with no copy that filled it: not convert-shard-to-mpi's
// form, refused (MPI forbids the aliasing).
func.func @aliased(%buf: memref<16xf32>) {
  %world = mpi.comm_world : !mpi.comm
  // expected-error @below {{hkt-mpi-separate-allreduce-buffers: the same buffer to send and receive, and no copy that filled it}}
  mpi.allreduce(%buf, %buf, MPI_SUM, %world) : memref<16xf32>, memref<16xf32>
  return
}
