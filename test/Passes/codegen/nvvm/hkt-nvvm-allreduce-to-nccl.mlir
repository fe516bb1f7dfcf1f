// RUN: hkt-opt %s --split-input-file --verify-diagnostics --hkt-nvvm-allreduce-to-nccl | FileCheck %s

// A GPU train step's gradient sum (after hkt-nvvm-host-staging: device
// buffers) becomes a call of the runtime's NCCL all-reduce, declared once
// with hkt.device_call (gpu-async-region waits for the stream before it);
// the world's handle and the rank with its dead index arithmetic go.
// CHECK-LABEL: func.func private @hktNcclAllReduceF32
// CHECK-SAME: (memref<?xf32, strided<[1], offset: ?>>, memref<?xf32, strided<[1], offset: ?>>, i32)
// CHECK-SAME: attributes {hkt.device_call}
// CHECK-LABEL: func.func @sum_gradients
// CHECK-NOT: mpi.
// CHECK: %[[SEND:.+]] = memref.cast %{{.+}} : memref<12xf32> to memref<?xf32, strided<[1], offset: ?>>
// CHECK: %[[RECV:.+]] = memref.cast %{{.+}} : memref<12xf32> to memref<?xf32, strided<[1], offset: ?>>
// CHECK: %[[SUM:.+]] = arith.constant 0 : i32
// CHECK: call @hktNcclAllReduceF32(%[[SEND]], %[[RECV]], %[[SUM]])
// CHECK: %[[SEND2:.+]] = memref.cast %{{.+}} : memref<4xf32, strided<[1], offset: 8>> to memref<?xf32, strided<[1], offset: ?>>
// CHECK: %[[MAX:.+]] = arith.constant 2 : i32
// CHECK: call @hktNcclAllReduceF32(%[[SEND2]], %{{.+}}, %[[MAX]])
// CHECK-NOT: mpi.
func.func @sum_gradients(%n: index) {
  %send = gpu.alloc () : memref<12xf32>
  %recv = gpu.alloc () : memref<12xf32>
  %world = mpi.comm_world : !mpi.comm
  %retval, %rank = mpi.comm_rank(%world) : !mpi.retval, i32
  %r = arith.index_cast %rank : i32 to index
  %coordinate = arith.remsi %r, %n : index
  %world2 = mpi.comm_world : !mpi.comm
  mpi.allreduce(%send, %recv, MPI_SUM, %world2) : memref<12xf32>, memref<12xf32>
  %part = memref.subview %send[8] [4] [1] : memref<12xf32> to memref<4xf32, strided<[1], offset: 8>>
  %most = gpu.alloc () : memref<4xf32>
  mpi.allreduce(%part, %most, MPI_MAX, %world2) : memref<4xf32, strided<[1], offset: 8>>, memref<4xf32>
  return
}

// -----

// MPI's MINLOC has no NCCL counterpart.
func.func @minloc(%a: memref<4xf32>, %b: memref<4xf32>) {
  %world = mpi.comm_world : !mpi.comm
  // expected-error @below {{hkt-nvvm-allreduce-to-nccl: NCCL has no MPI_MINLOC reduction}}
  mpi.allreduce(%a, %b, MPI_MINLOC, %world) : memref<4xf32>, memref<4xf32>
  return
}

// -----

// The NCCL communicator is the world's: a split one has none.
func.func @split(%a: memref<4xf32>, %b: memref<4xf32>, %color: i32, %key: i32) {
  %world = mpi.comm_world : !mpi.comm
  %comm = mpi.comm_split(%world, %color, %key) : !mpi.comm
  // expected-error @below {{hkt-nvvm-allreduce-to-nccl: only the world communicator has an NCCL communicator}}
  mpi.allreduce(%a, %b, MPI_SUM, %comm) : memref<4xf32>, memref<4xf32>
  return
}

// -----

// The runtime's all-reduce sums f32 (the gradients).
func.func @f64(%a: memref<4xf64>, %b: memref<4xf64>) {
  %world = mpi.comm_world : !mpi.comm
  // expected-error @below {{hkt-nvvm-allreduce-to-nccl: the send buffer must be a contiguous 1-D f32 buffer, got 'memref<4xf64>'}}
  mpi.allreduce(%a, %b, MPI_SUM, %world) : memref<4xf64>, memref<4xf64>
  return
}

// -----

// A strided view is not one buffer NCCL can take.
func.func @strided(%a: memref<4xf32, strided<[2]>>, %b: memref<4xf32>) {
  %world = mpi.comm_world : !mpi.comm
  // expected-error @below {{hkt-nvvm-allreduce-to-nccl: the send buffer must be a contiguous 1-D f32 buffer}}
  mpi.allreduce(%a, %b, MPI_SUM, %world) : memref<4xf32, strided<[2]>>, memref<4xf32>
  return
}

// -----

// Other MPI operations have no lowering on the GPU path.
func.func @send(%a: memref<4xf32>, %tag: i32, %dest: i32) {
  %world = mpi.comm_world : !mpi.comm
  // expected-error @below {{hkt-nvvm-allreduce-to-nccl: the GPU path has no lowering for it}}
  mpi.send(%a, %tag, %dest, %world) : memref<4xf32>, i32, i32
  return
}
