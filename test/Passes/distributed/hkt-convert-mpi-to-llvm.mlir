// RUN: hkt-opt %s --hkt-convert-mpi-to-llvm --split-input-file | FileCheck %s

// MPI_SUM is Open MPI 4's `&ompi_mpi_op_sum` (MLIR 22's lowering alone names
// it @ompi_mpi_sum, which no Open MPI library exports); a module without
// mpi.dlti gets Open MPI's ABI, the runtime's.

// CHECK: module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "OpenMPI">}
// CHECK-DAG: llvm.func @MPI_Allreduce(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-DAG: llvm.mlir.global external @ompi_mpi_op_sum()
// CHECK-DAG: llvm.mlir.global external @ompi_mpi_float()
// CHECK-DAG: llvm.mlir.global external @ompi_mpi_comm_world()
// CHECK-NOT: @ompi_mpi_sum
// CHECK-LABEL: func.func @sum
// CHECK: llvm.mlir.addressof @ompi_mpi_op_sum
// CHECK: llvm.call @MPI_Allreduce
func.func @sum(%buf: memref<16xf32>) {
  %world = mpi.comm_world : !mpi.comm
  mpi.allreduce(%buf, %buf, MPI_SUM, %world) : memref<16xf32>, memref<16xf32>
  return
}

// -----

// MIN and MAX too; a module that names its implementation keeps it.
// CHECK: module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "OpenMPI", "MPI:comm_world_rank" = 0 : i64>}
// CHECK-DAG: llvm.mlir.global external @ompi_mpi_op_max()
// CHECK-DAG: llvm.mlir.global external @ompi_mpi_op_min()
// CHECK-NOT: @ompi_mpi_max
// CHECK-NOT: @ompi_mpi_min(
module attributes {mpi.dlti = #dlti.map<"MPI:Implementation" = "OpenMPI", "MPI:comm_world_rank" = 0 : i64>} {
  func.func @extremes(%buf: memref<4xf64>) {
    %world = mpi.comm_world : !mpi.comm
    mpi.allreduce(%buf, %buf, MPI_MAX, %world) : memref<4xf64>, memref<4xf64>
    mpi.allreduce(%buf, %buf, MPI_MIN, %world) : memref<4xf64>, memref<4xf64>
    return
  }
}

// -----

// Nothing to do without mpi ops.
// CHECK: module {
// CHECK-NEXT: func.func @plain
func.func @plain() {
  return
}
