// RUN: hkt-opt %s -hkt-nvvm-fuse-independent-launches -split-input-file | FileCheck %s
// RUN: hkt-opt %s -hkt-nvvm-fuse-independent-launches=kinds=fill -split-input-file | FileCheck %s --check-prefix=KINDS

// Three updates of distinct buffers (2, 1 and 3 blocks): one launch of 6
// blocks; the second body sees its blocks from 0 and a grid of 1, the
// third takes the rest without a test. The buffer allocated between them
// moves above.

// CHECK-LABEL: func.func @three_updates(
// CHECK-SAME: %[[A:[a-z0-9]+]]: memref<512xf32>, %[[B:[a-z0-9]+]]: memref<256xf32>
// CHECK: %[[C:.+]] = gpu.alloc () : memref<768xf32>
// CHECK: %[[SIX:.+]] = arith.constant 6 : index
// CHECK: gpu.launch blocks(%[[BX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[SIX]], {{.*}} function(@adamw_0)
// CHECK-NEXT: %[[TWO:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[FIRST:.+]] = arith.cmpi ult, %[[BX]], %[[TWO]]
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK: memref.store %{{.+}}, %[[A]]
// CHECK: } else {
// CHECK: %[[THREE:.+]] = arith.constant 3 : index
// CHECK-NEXT: %[[SECOND:.+]] = arith.cmpi ult, %[[BX]], %[[THREE]]
// CHECK-NEXT: scf.if %[[SECOND]] {
// CHECK-NEXT: %[[OFF:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[BX1:.+]] = arith.subi %[[BX]], %[[OFF]]
// CHECK-NEXT: %[[G1:.+]] = arith.constant 1 : index
// CHECK-NEXT: arith.addi %[[BX1]], %[[G1]]
// CHECK: memref.store %{{.+}}, %[[B]]
// CHECK: } else {
// CHECK-NEXT: %[[OFF3:.+]] = arith.constant 3 : index
// CHECK-NEXT: %[[BX2:.+]] = arith.subi %[[BX]], %[[OFF3]]
// CHECK: memref.store %{{.+}}, %[[C]]
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return

// KINDS-LABEL: func.func @three_updates(
// KINDS-COUNT-3: gpu.launch
func.func @three_updates(%a: memref<512xf32>, %b: memref<256xf32>, %x: f32) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1)
             function(@adamw_0) {
    %i = arith.muli %bx, %c256 : index
    %j = arith.addi %i, %tx : index
    %v = memref.load %a[%j] : memref<512xf32>
    %w = arith.mulf %v, %x : f32
    memref.store %w, %a[%j] : memref<512xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1)
             function(@adamw_1) {
    %u = arith.addi %bx, %gx : index
    %i = arith.index_cast %u : index to i32
    %w = arith.sitofp %i : i32 to f32
    memref.store %w, %b[%tx] : memref<256xf32>
    gpu.terminator
  }
  %c = gpu.alloc () : memref<768xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1)
             function(@adamw_2) {
    %i = arith.muli %bx, %c256 : index
    %j = arith.addi %i, %tx : index
    memref.store %x, %c[%j] : memref<768xf32>
    gpu.terminator
  }
  gpu.dealloc %c : memref<768xf32>
  return
}

// -----

// The second reads what the first writes (through a view): not fused.
// Different kinds, a different block size, a dynamic grid, or a host op
// with effects between them: not fused either.

// CHECK-LABEL: func.func @not_fused(
// CHECK-COUNT-6: gpu.launch
func.func @not_fused(%a: memref<2x256xf32>, %b: memref<256xf32>, %n: index,
                     %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1)
             function(@add_0) {
    memref.store %x, %a[%c0, %tx] : memref<2x256xf32>
    gpu.terminator
  }
  %row = memref.subview %a[0, 0] [1, 256] [1, 1] : memref<2x256xf32> to memref<256xf32, strided<[1]>>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1)
             function(@add_1) {
    %v = memref.load %row[%tx] : memref<256xf32, strided<[1]>>
    memref.store %v, %b[%tx] : memref<256xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1)
             function(@fill_2) {
    memref.store %x, %a[%c1, %tx] : memref<2x256xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1)
             function(@fill_3) {
    memref.store %x, %b[%tx] : memref<256xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1)
             function(@fill_4) {
    gpu.terminator
  }
  memref.store %x, %b[%c0] : memref<256xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1)
             function(@fill_5) {
    memref.store %x, %a[%c0, %tx] : memref<2x256xf32>
    gpu.terminator
  }
  return
}

// -----

// Two launches of 24 rank-4 descriptors each (2 x 24 x 88 bytes = 4224): together
// past the 4 KiB a kernel's parameters may take, so not fused.

// CHECK-LABEL: func.func @too_many_parameters(
// CHECK-COUNT-2: gpu.launch
func.func @too_many_parameters(%a0: memref<2x2x2x2xf32>, %a1: memref<2x2x2x2xf32>, %a2: memref<2x2x2x2xf32>, %a3: memref<2x2x2x2xf32>, %a4: memref<2x2x2x2xf32>, %a5: memref<2x2x2x2xf32>, %a6: memref<2x2x2x2xf32>, %a7: memref<2x2x2x2xf32>, %a8: memref<2x2x2x2xf32>, %a9: memref<2x2x2x2xf32>, %a10: memref<2x2x2x2xf32>, %a11: memref<2x2x2x2xf32>, %a12: memref<2x2x2x2xf32>, %a13: memref<2x2x2x2xf32>, %a14: memref<2x2x2x2xf32>, %a15: memref<2x2x2x2xf32>, %a16: memref<2x2x2x2xf32>, %a17: memref<2x2x2x2xf32>, %a18: memref<2x2x2x2xf32>, %a19: memref<2x2x2x2xf32>, %a20: memref<2x2x2x2xf32>, %a21: memref<2x2x2x2xf32>, %a22: memref<2x2x2x2xf32>, %a23: memref<2x2x2x2xf32>, %a24: memref<2x2x2x2xf32>, %a25: memref<2x2x2x2xf32>, %a26: memref<2x2x2x2xf32>, %a27: memref<2x2x2x2xf32>, %a28: memref<2x2x2x2xf32>, %a29: memref<2x2x2x2xf32>, %a30: memref<2x2x2x2xf32>, %a31: memref<2x2x2x2xf32>, %a32: memref<2x2x2x2xf32>, %a33: memref<2x2x2x2xf32>, %a34: memref<2x2x2x2xf32>, %a35: memref<2x2x2x2xf32>, %a36: memref<2x2x2x2xf32>, %a37: memref<2x2x2x2xf32>, %a38: memref<2x2x2x2xf32>, %a39: memref<2x2x2x2xf32>, %a40: memref<2x2x2x2xf32>, %a41: memref<2x2x2x2xf32>, %a42: memref<2x2x2x2xf32>, %a43: memref<2x2x2x2xf32>, %a44: memref<2x2x2x2xf32>, %a45: memref<2x2x2x2xf32>, %a46: memref<2x2x2x2xf32>, %a47: memref<2x2x2x2xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c1, %sz = %c1)
             function(@fill_0) {
    memref.store %x, %a0[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a1[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a2[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a3[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a4[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a5[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a6[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a7[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a8[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a9[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a10[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a11[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a12[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a13[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a14[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a15[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a16[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a17[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a18[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a19[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a20[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a21[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a22[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a23[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c1, %sz = %c1)
             function(@fill_1) {
    memref.store %x, %a24[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a25[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a26[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a27[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a28[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a29[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a30[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a31[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a32[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a33[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a34[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a35[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a36[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a37[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a38[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a39[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a40[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a41[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a42[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a43[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a44[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a45[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a46[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    memref.store %x, %a47[%c0, %c0, %c0, %tx] : memref<2x2x2x2xf32>
    gpu.terminator
  }
  return
}
