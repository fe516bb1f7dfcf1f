// RUN: hkt-opt %s --split-input-file --hkt-cpu-loop-buffers-to-stack | FileCheck %s

// Allocated and freed in every key-tile iteration inside a parallel loop:
// one stack buffer each (alignment kept) at the start of the parallel body,
// no alloc or dealloc left in the sequential loop.
// CHECK-LABEL: func.func @tiles
// CHECK: scf.parallel
// CHECK-NEXT: %[[M:.+]] = memref.alloca() : memref<64xf32>
// CHECK-NEXT: %[[S:.+]] = memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK-NEXT: scf.for
// CHECK-NEXT: linalg.fill ins(%{{.+}} : f32) outs(%[[S]] : memref<64x64xf32>)
// CHECK-NEXT: linalg.fill ins(%{{.+}} : f32) outs(%[[M]] : memref<64xf32>)
// CHECK-NOT: memref.alloc(
// CHECK-NOT: memref.dealloc
func.func @tiles() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%q) = (%c0) to (%c4) step (%c1) {
    scf.for %k = %c0 to %c8 step %c1 {
      %s = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
      %m = memref.alloc() : memref<64xf32>
      linalg.fill ins(%zero : f32) outs(%s : memref<64x64xf32>)
      linalg.fill ins(%zero : f32) outs(%m : memref<64xf32>)
      memref.dealloc %m : memref<64xf32>
      memref.dealloc %s : memref<64x64xf32>
    }
    scf.reduce
  }
  return
}

// -----

// scf.forall bodies too; nested in an scf.if within the loop.
// CHECK-LABEL: func.func @forall
// CHECK: scf.forall
// CHECK-NEXT: memref.alloca() : memref<16xf32>
// CHECK-NOT: memref.alloc(
func.func @forall(%p: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%q) in (4) {
    scf.for %k = %c0 to %c8 step %c1 {
      scf.if %p {
        %t = memref.alloc() : memref<16xf32>
        linalg.fill ins(%zero : f32) outs(%t : memref<16xf32>)
        memref.dealloc %t : memref<16xf32>
      }
    }
  }
  return
}

// -----

// Left on the heap: in a parallel body but no loop between (once per
// parallel iteration already); in a loop outside any parallel loop;
// dynamic sizes; freed in another block (its lifetime spans iterations or
// blocks); never freed here; past 256 KiB for one parallel body (the
// first 256 KiB take the stack).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-1: memref.alloca() : memref<65536xf32>
// CHECK-NOT: memref.alloca
// CHECK-COUNT-6: memref.alloc(
func.func @kept(%n: index, %p: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%q) = (%c0) to (%c4) step (%c1) {
    %once = memref.alloc() : memref<16xf32>
    linalg.fill ins(%zero : f32) outs(%once : memref<16xf32>)
    memref.dealloc %once : memref<16xf32>
    scf.for %k = %c0 to %c4 step %c1 {
      %dyn = memref.alloc(%n) : memref<?xf32>
      linalg.fill ins(%zero : f32) outs(%dyn : memref<?xf32>)
      memref.dealloc %dyn : memref<?xf32>
      %other = memref.alloc() : memref<16xf32>
      scf.if %p {
        memref.dealloc %other : memref<16xf32>
      }
      %big = memref.alloc() : memref<65536xf32>
      linalg.fill ins(%zero : f32) outs(%big : memref<65536xf32>)
      memref.dealloc %big : memref<65536xf32>
      %more = memref.alloc() : memref<16xf32>
      linalg.fill ins(%zero : f32) outs(%more : memref<16xf32>)
      memref.dealloc %more : memref<16xf32>
    }
    scf.reduce
  }
  scf.for %k = %c0 to %c4 step %c1 {
    %serial = memref.alloc() : memref<16xf32>
    linalg.fill ins(%zero : f32) outs(%serial : memref<16xf32>)
    memref.dealloc %serial : memref<16xf32>
  }
  %leak = memref.alloc() : memref<16xf32>
  return
}
