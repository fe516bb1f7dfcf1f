// RUN: hkt-opt %s --hkt-cpu-reference-pipeline | FileCheck %s
// RUN: hkt-opt %s --hkt-cpu-reference-pipeline | FileCheck %s --check-prefix=GONE

// The reference pipeline takes hkt on tensors to the LLVM dialect. The result
// becomes a trailing out-parameter (the caller owns every buffer); every
// intermediate buffer is freed; the C interface wraps each public function.

// Nothing but the LLVM dialect is left anywhere in the output.
// GONE-NOT: hkt.
// GONE-NOT: linalg.
// GONE-NOT: memref.
// GONE-NOT: tensor.
// GONE-NOT: scf.
// GONE-NOT: arith.
// GONE-NOT: math.
// GONE-NOT: func.func
// GONE: llvm.func @_mlir_ciface_layer
// CHECK-LABEL: llvm.func @layer(
// CHECK-NOT: llvm.return %
// CHECK: llvm.call @malloc
// CHECK: llvm.call @free
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @_mlir_ciface_layer(
// CHECK-SAME: %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %[[OUT:.+]]: !llvm.ptr)
// CHECK: llvm.load %[[OUT]] : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)>
// CHECK: llvm.call @layer(
func.func @layer(%x: tensor<2x9x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>) -> tensor<2x9x4xf32> attributes {llvm.emit_c_interface} {
  %init = tensor.empty() : tensor<2x9x4xf32>
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x9x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>)
         downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>)
         lengths(%len : tensor<2xi32>) outs(%init : tensor<2x9x4xf32>) {causal = true, heads = 2 : i64, hybrid = true, levels = 3 : i64} -> tensor<2x9x4xf32>
  return %y : tensor<2x9x4xf32>
}
