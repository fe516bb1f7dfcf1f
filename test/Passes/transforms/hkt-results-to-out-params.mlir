// RUN: hkt-opt %s --split-input-file --hkt-results-to-out-params | FileCheck %s

// A dynamic result and a static one: both become out-parameters, in result
// order after the arguments; the dynamic one is copied, the static buffer the
// function allocates is the out-parameter itself.
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[X:.+]]: memref<?x4xf32>, %[[OUT0:.+]]: memref<?x4xf32>, %[[OUT1:.+]]: memref<f32>) {
// CHECK: %[[Y:.+]] = memref.alloc(%{{.+}}) : memref<?x4xf32>
// CHECK-NOT: memref.alloc
// CHECK: linalg.copy ins(%[[X]] : memref<?x4xf32>) outs(%[[Y]] : memref<?x4xf32>)
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[OUT1]] : memref<f32>)
// CHECK: memref.copy %[[Y]], %[[OUT0]] : memref<?x4xf32> to memref<?x4xf32>
// CHECK-NEXT: return{{$}}
func.func @rows(%x: memref<?x4xf32>) -> (memref<?x4xf32>, memref<f32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x4xf32>
  %y = memref.alloc(%n) : memref<?x4xf32>
  linalg.copy ins(%x : memref<?x4xf32>) outs(%y : memref<?x4xf32>)
  %s = memref.alloc() : memref<f32>
  linalg.fill ins(%zero : f32) outs(%s : memref<f32>)
  return %y, %s : memref<?x4xf32>, memref<f32>
}

// -----

// An argument returned as a result is copied (never aliased).
// CHECK-LABEL: func.func @identity
// CHECK-SAME: (%[[X:.+]]: memref<?xf32>, %[[OUT:.+]]: memref<?xf32>)
// CHECK: memref.copy %[[X]], %[[OUT]] : memref<?xf32> to memref<?xf32>
func.func @identity(%x: memref<?xf32>) -> memref<?xf32> {
  return %x : memref<?xf32>
}

// -----

// Functions with static results only are left to upstream
// buffer-results-to-out-params.
// CHECK-LABEL: func.func @static
// CHECK-SAME: -> memref<4xf32>
func.func @static(%x: memref<4xf32>) -> memref<4xf32> {
  return %x : memref<4xf32>
}

// -----

// A private function with callers (a batched entry's row function of
// dynamic length) is inlined at its calls, its affine.apply ops expanded
// to arith (the affine inliner refuses their operands inside a loop), and
// erased (with the entry's hkt.row_function that named it); the entry
// then gets its out-parameter.
// CHECK-LABEL: func.func @entry
// CHECK-SAME: (%[[X:.+]]: memref<?xf32>, %[[OUT:.+]]: memref<?xf32>) {
// CHECK-NOT: call
// CHECK: scf.for
// CHECK: %[[N:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK: memref.alloc(%[[N]]) : memref<?xf32>
// CHECK: memref.copy %{{.+}}, %[[OUT]]
// CHECK-NOT: func.func private @row
#plus1 = affine_map<()[s0] -> (s0 + 1)>
func.func private @row(%x: memref<?xf32>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %m = affine.apply #plus1()[%n]
  %y = memref.alloc(%m) : memref<?xf32>
  return %y : memref<?xf32>
}
func.func @entry(%x: memref<?xf32>) -> memref<?xf32> attributes {hkt.row_function = @row} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %x) -> (memref<?xf32>) {
    %y = func.call @row(%acc) : (memref<?xf32>) -> memref<?xf32>
    scf.yield %y : memref<?xf32>
  }
  return %r : memref<?xf32>
}
