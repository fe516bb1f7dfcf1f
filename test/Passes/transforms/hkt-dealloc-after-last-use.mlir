// RUN: hkt-opt %s --split-input-file --hkt-dealloc-after-last-use | FileCheck %s

// Each buffer is freed after the last op that uses it or a view of it,
// the ops of nested regions counted at their ancestor in the block; %b is
// allocated after %a is freed (the allocator can reuse %a's memory).
// CHECK-LABEL: func.func @straight_line
// CHECK: %[[A:.+]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: linalg.fill ins(%{{.+}} : f32) outs(%[[A]] : memref<16xf32>)
// CHECK-NEXT: %[[V:.+]] = memref.subview %[[A]]
// CHECK-NEXT: scf.for
// CHECK: memref.load %[[V]]
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[A]] : memref<16xf32>
// CHECK-NEXT: %[[B:.+]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: linalg.fill ins(%{{.+}} : f32) outs(%[[B]] : memref<16xf32>)
// CHECK-NEXT: memref.copy %[[B]], %{{.+}}
// CHECK-NEXT: memref.dealloc %[[B]] : memref<16xf32>
// CHECK-NEXT: return
func.func @straight_line(%out: memref<16xf32>, %acc: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<16xf32>
  linalg.fill ins(%one : f32) outs(%a : memref<16xf32>)
  %v = memref.subview %a[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %v[%i] : memref<8xf32, strided<[1]>>
    memref.store %x, %acc[%c0] : memref<1xf32>
  }
  %b = memref.alloc() : memref<16xf32>
  linalg.fill ins(%one : f32) outs(%b : memref<16xf32>)
  memref.copy %b, %out : memref<16xf32> to memref<16xf32>
  memref.dealloc %a : memref<16xf32>
  memref.dealloc %b : memref<16xf32>
  return
}

// -----

// A buffer whose address leaves as an index, or that a loop carries, stays
// freed where it was: its last use cannot be seen.
// CHECK-LABEL: func.func @escapes
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: scf.for
// CHECK: memref.alloc() : memref<8xf32>
// CHECK-NEXT: memref.dealloc %{{.+}} : memref<8xf32>
// CHECK-NEXT: memref.dealloc %{{.+}} : memref<4xf32>
// CHECK-NEXT: memref.dealloc %{{.+}} : memref<4xf32>
// CHECK-NEXT: return
func.func @escapes(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<4xf32>
  %p = memref.extract_aligned_pointer_as_index %a : memref<4xf32> -> index
  %b = memref.alloc() : memref<4xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%m = %b) -> (memref<4xf32>) {
    scf.yield %m : memref<4xf32>
  }
  %later = memref.alloc() : memref<8xf32>
  memref.dealloc %later : memref<8xf32>
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<4xf32>
  return %p : index
}
