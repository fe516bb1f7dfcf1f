// RUN: hkt-opt %s --split-input-file --hkt-cpu-hoist-vector-accumulators | FileCheck %s

// The accumulator of a register tile, in a view of a buffer that is also
// reshaped elsewhere (upstream's hoisting refuses any such buffer): read
// before the K loop, carried, written after it. The operands come from other
// buffers (an argument and another allocation).
// CHECK-LABEL: func.func @through_views
// CHECK: memref.alloc
// CHECK-NEXT: %[[C:.+]] = memref.alloc
// CHECK: %[[ACC:.+]] = vector.transfer_read %[[C]][%c0, %c0]
// CHECK-NEXT: %[[R:.+]] = scf.for %{{.+}} = %c0 to %c64 step %c4 iter_args(%[[IT:.+]] = %[[ACC]]) -> (vector<4x16xf32>)
// CHECK-NOT: vector.transfer_read %[[C]]
// CHECK: vector.contract {{.+}} %[[IT]]
// CHECK-NOT: vector.transfer_write
// CHECK: scf.yield
// CHECK: vector.transfer_write %[[R]], %[[C]][%c0, %c0]
#map_a = affine_map<(m, n, k) -> (m, k)>
#map_b = affine_map<(m, n, k) -> (k, n)>
#map_c = affine_map<(m, n, k) -> (m, n)>
func.func @through_views(%a: memref<64x64xf32>) -> memref<2x32x16xf32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  %b = memref.alloc() : memref<64x16xf32>
  %c = memref.alloc() : memref<64x16xf32>
  scf.for %k = %c0 to %c64 step %c4 {
    %acc = vector.transfer_read %c[%c0, %c0], %pad {in_bounds = [true, true]} : memref<64x16xf32>, vector<4x16xf32>
    %va = vector.transfer_read %a[%c0, %k], %pad {in_bounds = [true, true]} : memref<64x64xf32>, vector<4x4xf32>
    %vb = vector.transfer_read %b[%k, %c0], %pad {in_bounds = [true, true]} : memref<64x16xf32>, vector<4x16xf32>
    %r = vector.contract {indexing_maps = [#map_a, #map_b, #map_c], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %va, %vb, %acc : vector<4x4xf32>, vector<4x16xf32> into vector<4x16xf32>
    vector.transfer_write %r, %c[%c0, %c0] {in_bounds = [true, true]} : vector<4x16xf32>, memref<64x16xf32>
  }
  %view = memref.expand_shape %c [[0, 1], [2]] output_shape [2, 32, 16] : memref<64x16xf32> into memref<2x32x16xf32>
  return %view : memref<2x32x16xf32>
}

// -----

// Accumulator and operand in two arguments: distinct buffers, hoisted.
// CHECK-LABEL: func.func @arguments
// CHECK: vector.transfer_read %arg1
// CHECK-NEXT: scf.for {{.+}} iter_args
// CHECK: vector.transfer_write {{.+}}, %arg1
// CHECK-NEXT: return
func.func @arguments(%a: memref<64xf32>, %c: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  scf.for %k = %c0 to %c64 step %c16 {
    %acc = vector.transfer_read %c[%c0], %pad {in_bounds = [true]} : memref<16xf32>, vector<16xf32>
    %v = vector.transfer_read %a[%k], %pad {in_bounds = [true]} : memref<64xf32>, vector<16xf32>
    %s = arith.addf %acc, %v : vector<16xf32>
    vector.transfer_write %s, %c[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32>
  }
  return
}

// -----

// Another view of the accumulator's buffer is read in the loop: it may
// overlap the accumulator, so nothing moves.
// CHECK-LABEL: func.func @aliasing_read
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK-NEXT: vector.transfer_read
// CHECK-NEXT: vector.transfer_read
// CHECK-NEXT: arith.addf
// CHECK-NEXT: vector.transfer_write
// CHECK: return
func.func @aliasing_read(%buf: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  %acc_view = memref.subview %buf[0] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1]>>
  scf.for %k = %c0 to %c64 step %c16 {
    %acc = vector.transfer_read %acc_view[%c0], %pad {in_bounds = [true]} : memref<16xf32, strided<[1]>>, vector<16xf32>
    %v = vector.transfer_read %buf[%k], %pad {in_bounds = [true]} : memref<64xf32>, vector<16xf32>
    %s = arith.addf %acc, %v : vector<16xf32>
    vector.transfer_write %s, %acc_view[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32, strided<[1]>>
  }
  return
}

// -----

// The location moves with the loop (a row per iteration): not invariant.
// CHECK-LABEL: func.func @varying_location
// CHECK-NOT: iter_args
// CHECK: return
func.func @varying_location(%a: memref<64xf32>, %c: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  scf.for %k = %c0 to %c64 step %c16 {
    %acc = vector.transfer_read %c[%k], %pad {in_bounds = [true]} : memref<64xf32>, vector<16xf32>
    %v = vector.transfer_read %a[%k], %pad {in_bounds = [true]} : memref<64xf32>, vector<16xf32>
    %s = arith.addf %acc, %v : vector<16xf32>
    vector.transfer_write %s, %c[%k] {in_bounds = [true]} : vector<16xf32>, memref<64xf32>
  }
  return
}

// -----

// An op of unknown memory effects in the loop blocks the hoisting.
// CHECK-LABEL: func.func @unknown_effects
// CHECK-NOT: iter_args
// CHECK: return
func.func private @opaque(memref<16xf32>)
func.func @unknown_effects(%a: memref<64xf32>, %c: memref<16xf32>, %other: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  scf.for %k = %c0 to %c64 step %c16 {
    %acc = vector.transfer_read %c[%c0], %pad {in_bounds = [true]} : memref<16xf32>, vector<16xf32>
    func.call @opaque(%other) : (memref<16xf32>) -> ()
    %v = vector.transfer_read %a[%k], %pad {in_bounds = [true]} : memref<64xf32>, vector<16xf32>
    %s = arith.addf %acc, %v : vector<16xf32>
    vector.transfer_write %s, %c[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32>
  }
  return
}

// -----

// Nested K loops (cache tile outside, register tile inside): the pair
// leaves the inner loop, then the outer one.
// CHECK-LABEL: func.func @nested
// CHECK: vector.transfer_read %arg1
// CHECK-NEXT: scf.for {{.+}} iter_args
// CHECK-NEXT: scf.for {{.+}} iter_args
// CHECK-COUNT-2: scf.yield
// CHECK: vector.transfer_write {{.+}}, %arg1
// CHECK-NEXT: return
func.func @nested(%a: memref<256xf32>, %c: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %pad = arith.constant 0.0 : f32
  scf.for %k0 = %c0 to %c256 step %c64 {
    scf.for %k1 = %c0 to %c64 step %c16 {
      %k = arith.addi %k0, %k1 : index
      %acc = vector.transfer_read %c[%c0], %pad {in_bounds = [true]} : memref<16xf32>, vector<16xf32>
      %v = vector.transfer_read %a[%k], %pad {in_bounds = [true]} : memref<256xf32>, vector<16xf32>
      %s = arith.addf %acc, %v : vector<16xf32>
      vector.transfer_write %s, %c[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32>
    }
  }
  return
}
