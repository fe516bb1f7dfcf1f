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
