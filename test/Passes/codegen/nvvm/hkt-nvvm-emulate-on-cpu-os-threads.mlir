// RUN: hkt-opt %s --hkt-nvvm-emulate-on-cpu=os-threads | FileCheck %s

// hkt-nvvm-emulate-on-cpu=os-threads, the former emulation (the default,
// thread loops, is tested in hkt-nvvm-emulate-on-cpu.mlir).

// A launch of 3 x 2 blocks of 64 threads: a private function of its own
// (named for the kernel), called where the launch was; in it the blocks one
// after another, each an OpenMP team of exactly 64 threads whose ids come
// from omp_get_thread_num, the barrier an omp.barrier, the workgroup buffer
// one stack buffer for all blocks, the device buffers host buffers.
// CHECK-LABEL: func.func @launch
// CHECK-SAME: (%[[X:.+]]: memref<384xf32>)
// CHECK: %[[D:.+]] = memref.alloc() : memref<384xf32>
// CHECK: memref.copy %[[X]], %[[D]]
// CHECK: call @kernel(%[[D]]) : (memref<384xf32>) -> ()
// CHECK: memref.copy %[[D]], %[[X]]
// CHECK: memref.dealloc %[[D]]
// CHECK: func.func private @kernel(
// CHECK: %[[SH:.+]] = memref.alloca() : memref<64xf32>
// CHECK: scf.for %{{.+}} = %{{.+}} to %c1{{.*}} step
// CHECK: scf.for %[[BY:.+]] = %{{.+}} to %c2{{.*}} step
// CHECK: scf.for %[[BX:.+]] = %{{.+}} to %c3{{.*}} step
// CHECK: %[[N:.+]] = arith.index_cast %{{.+}} : index to i32
// CHECK: omp.parallel num_threads(%[[N]] : i32) {
// CHECK: %[[TID:.+]] = func.call @omp_get_thread_num() : () -> i32
// CHECK: memref.store %{{.+}}, %[[SH]]
// CHECK: omp.barrier
// CHECK: memref.load %[[SH]]
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<384xf32>
// CHECK: omp.terminator
// CHECK-NOT: gpu.
// CHECK: func.func private @omp_get_thread_num() -> i32
func.func @launch(%x: memref<384xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c64 = arith.constant 64 : index
  %c63 = arith.constant 63 : index
  %d = gpu.alloc () : memref<384xf32>
  gpu.memcpy %d, %x : memref<384xf32>, memref<384xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c2, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)
             workgroup(%sh : memref<64xf32, #gpu.address_space<workgroup>>) {
    %block = arith.addi %bx, %by : index
    %base = arith.muli %block, %c64 : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %d[%i] : memref<384xf32>
    memref.store %v, %sh[%tx] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    // Each thread reads its neighbour's element: right only after the barrier.
    %j = arith.subi %c63, %tx : index
    %w = memref.load %sh[%j] : memref<64xf32, #gpu.address_space<workgroup>>
    memref.store %w, %d[%i] : memref<384xf32>
    gpu.terminator
  }
  gpu.memcpy %x, %d : memref<384xf32>, memref<384xf32>
  gpu.dealloc %d : memref<384xf32>
  return
}
