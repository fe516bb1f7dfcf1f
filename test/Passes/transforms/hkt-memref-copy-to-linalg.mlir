// RUN: hkt-opt %s --split-input-file --hkt-memref-copy-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @strided
// CHECK-SAME: (%[[A:.+]]: memref<2x9x4xf32>, %[[B:.+]]: memref<2x11x4xf32>)
// CHECK: %[[SUB:.+]] = memref.subview %[[B]][0, 2, 0] [2, 9, 4] [1, 1, 1]
// CHECK: linalg.copy ins(%[[A]] : memref<2x9x4xf32>) outs(%[[SUB]] : memref<2x9x4xf32, strided<[44, 4, 1], offset: 8>>)
// CHECK-NOT: memref.copy
func.func @strided(%a: memref<2x9x4xf32>, %b: memref<2x11x4xf32>) {
  %sub = memref.subview %b[0, 2, 0] [2, 9, 4] [1, 1, 1] : memref<2x11x4xf32> to memref<2x9x4xf32, strided<[44, 4, 1], offset: 8>>
  memref.copy %a, %sub : memref<2x9x4xf32> to memref<2x9x4xf32, strided<[44, 4, 1], offset: 8>>
  return
}

// -----

// Contiguous copies stay memref.copy (they lower to memcpy).
// CHECK-LABEL: func.func @contiguous
// CHECK: memref.copy %{{.+}}, %{{.+}} : memref<4x4xf32> to memref<4x4xf32>
// CHECK-NOT: linalg.copy
func.func @contiguous(%a: memref<4x4xf32>, %b: memref<4x4xf32>) {
  memref.copy %a, %b : memref<4x4xf32> to memref<4x4xf32>
  return
}
