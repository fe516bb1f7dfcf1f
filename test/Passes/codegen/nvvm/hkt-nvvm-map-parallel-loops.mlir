// RUN: hkt-opt %s --split-input-file --hkt-nvvm-map-parallel-loops | FileCheck %s
// RUN: hkt-opt %s --split-input-file --hkt-nvvm-map-parallel-loops="block-size=128" | FileCheck %s --check-prefix=B128
// RUN: not hkt-opt %s --hkt-nvvm-map-parallel-loops="block-size=100" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: block-size must be a multiple of 32 in [32, 1024]

// A rank-3 loop of 2 x 100 x 64 = 12800 iterations with a reduction inside:
// 50 blocks of 256 threads, the innermost index fastest, the body (and its
// scf.for) cloned once into the guarded kernel.
// CHECK-LABEL: func.func @rank3
// CHECK-SAME: (%[[A:.+]]: memref<2x100x32xf32>, %[[W:.+]]: memref<32x64xf32>, %[[Y:.+]]: memref<2x100x64xf32>)
// CHECK-NOT: scf.parallel
// CHECK: gpu.launch blocks(%[[BX:[^,]+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %c50, %{{.+}} = %c1{{.*}}, %{{.+}} = %c1{{.*}}) threads(%[[TX:[^,]+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %c256
// CHECK: %[[BASE:.+]] = arith.muli %[[BX]], %c256
// CHECK: %[[ID:.+]] = arith.addi %[[BASE]], %[[TX]]
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[ID]], %c12800
// CHECK: scf.if %[[IN]] {
// CHECK: %[[N:.+]] = arith.remui %[[ID]], %c64
// CHECK: %[[R1:.+]] = arith.divui %[[ID]], %c64
// CHECK: %[[T:.+]] = arith.remui %[[R1]], %c100
// CHECK: %[[B:.+]] = arith.divui %[[R1]], %c100
// CHECK: scf.for
// CHECK: memref.store %{{.+}}, %[[Y]][%{{.+}}, %{{.+}}, %{{.+}}]
// CHECK: gpu.terminator
// B128-LABEL: func.func @rank3
// B128: gpu.launch blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %c100{{.*}}, {{.*}} threads(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %c128
func.func @rank3(%a: memref<2x100x32xf32>, %w: memref<32x64xf32>, %y: memref<2x100x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c100 = arith.constant 100 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%b, %t, %n) = (%c0, %c0, %c0) to (%c2, %c100, %c64) step (%c1, %c1, %c1) {
    %sum = scf.for %k = %c0 to %c32 step %c1 iter_args(%acc = %zero) -> f32 {
      %x = memref.load %a[%b, %t, %k] : memref<2x100x32xf32>
      %v = memref.load %w[%k, %n] : memref<32x64xf32>
      %p = arith.mulf %x, %v : f32
      %s = arith.addf %acc, %p : f32
      scf.yield %s : f32
    }
    memref.store %sum, %y[%b, %t, %n] : memref<2x100x64xf32>
    scf.reduce
  }
  return
}

// -----

// Dynamic bounds: the grid is computed on the host, and a loop that turns
// out empty launches nothing (a grid of zero blocks is a launch error).
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[X:.+]]: memref<?xf32>, %[[N:.+]]: index)
// CHECK: %[[COUNT:.+]] = arith.ceildivui %[[N]], %c2
// CHECK: %[[BLOCKS:.+]] = arith.ceildivui %[[COUNT]], %c256
// CHECK: %[[ANY:.+]] = arith.cmpi ugt, %[[COUNT]], %c0
// CHECK: scf.if %[[ANY]] {
// CHECK: gpu.launch blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %[[BLOCKS]],
//   Iteration i is element 2 i.
// CHECK: %[[SCALED:.+]] = arith.muli %{{.+}}, %c2 : index
// CHECK: memref.store %{{.+}}, %[[X]][%[[SCALED]]]
func.func @dynamic(%x: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c2) {
    memref.store %one, %x[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// A loop nested in a kernel already is left alone.
// CHECK-LABEL: func.func @inside_kernel
// CHECK: gpu.launch
// CHECK: scf.parallel
func.func @inside_kernel(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
      memref.store %one, %x[%i] : memref<4xf32>
      scf.reduce
    }
    gpu.terminator
  }
  return
}
