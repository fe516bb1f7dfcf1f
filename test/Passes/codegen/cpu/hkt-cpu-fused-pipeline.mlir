// RUN: hkt-opt %s --hkt-cpu-fused-pipeline | FileCheck %s
// Nothing but the LLVM dialect (and what translates with it) is left, anywhere in the module.
// RUN: hkt-opt %s --hkt-cpu-fused-pipeline | FileCheck %s --check-prefix=GONE
// The tile options reach hkt-cpu-lower-online-attention: 16 x 16 tiles give three
// query tiles of T = 40 (padded to 48); the default tiles shrink to one 40 x 40 tile.
// RUN: hkt-opt %s --hkt-cpu-fused-pipeline="tile-q=16 tile-k=16" --mlir-print-ir-after=hkt-cpu-lower-online-attention -o /dev/null 2>&1 | FileCheck %s --check-prefix=TILES
// RUN: hkt-opt %s --hkt-cpu-fused-pipeline --mlir-print-ir-after=hkt-cpu-lower-online-attention -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEFAULT
// RUN: not hkt-opt %s --hkt-cpu-fused-pipeline="tile-q=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADTILE
// RUN: not hkt-opt %s --hkt-cpu-fused-pipeline="tile-x=16" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADOPT

// A small layer: B = 2, T = 40, D = 8, H = 2, two levels, causal, key
// lengths, hybrid head. The result becomes a trailing out-parameter, every
// intermediate buffer is freed, the C interface wraps the function.
// CHECK-LABEL: llvm.func @layer(
// CHECK-NOT: llvm.return %
// CHECK: llvm.call @malloc
// CHECK: llvm.call @free
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @_mlir_ciface_layer(
// CHECK-SAME: %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %[[OUT:.+]]: !llvm.ptr)
// CHECK: llvm.load %[[OUT]] : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)>
// CHECK: llvm.call @layer(

// GONE-NOT: hkt.
// GONE-NOT: linalg.
// GONE-NOT: tensor.
// GONE-NOT: memref.
// GONE-NOT: bufferization.
// GONE-NOT: scf.
// GONE-NOT: affine.
// GONE-NOT: {{ }}vector.
// GONE-NOT: {{ }}arith.
// GONE-NOT: {{ }}math.
// GONE-NOT: func.func
// GONE-NOT: func.return

// TILES-LABEL: IR Dump After HktCpuLowerOnlineAttentionPass
// TILES-NOT: hkt.online_attention
// TILES-NOT: x40x40xf32
// TILES: scf.forall ({{.*}}) = (0, 0, 0) to (2, 2, 48) step (1, 1, 16)
// TILES-NOT: x40x40xf32
// TILES: linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<8x8xf32>)
// TILES-NOT: x40x40xf32
// TILES: scf.for {{.*}} -> (tensor<16x16xf32>)
// TILES-NOT: x40x40xf32
// TILES: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<16x4xf32>, tensor<4x16xf32>) outs(%{{.+}} : tensor<16x16xf32>)
// TILES-NOT: x40x40xf32

// DEFAULT-LABEL: IR Dump After HktCpuLowerOnlineAttentionPass
// DEFAULT: scf.forall ({{.*}}) = (0, 0, 0) to (2, 2, 40) step (1, 1, 40)
// DEFAULT: linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<20x20xf32>)
// DEFAULT: scf.for {{.*}} -> (tensor<40x40xf32>)
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<40x4xf32>, tensor<4x40xf32>) outs(%{{.+}} : tensor<40x40xf32>)

// BADTILE: error: tile-q and tile-k must be >= 1
// BADOPT: no such option tile-x
func.func @layer(%x: tensor<2x40x8xf32>, %wq: tensor<2x8x8xf32>, %wk: tensor<2x8x8xf32>, %wv: tensor<8x8xf32>, %wo: tensor<8x8xf32>, %theta: tensor<2x2xf32>, %dw: tensor<1x8x3xf32>, %db: tensor<1x8xf32>, %u: tensor<8x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>) -> tensor<2x40x8xf32> attributes {llvm.emit_c_interface} {
  %init = tensor.empty() : tensor<2x40x8xf32>
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x40x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<2x2xf32>)
         downsample(%dw, %db : tensor<1x8x3xf32>, tensor<1x8xf32>) conv(%u, %g : tensor<8x3xf32>, tensor<2xf32>)
         lengths(%len : tensor<2xi32>) outs(%init : tensor<2x40x8xf32>) {causal = true, heads = 2 : i64, hybrid = true, levels = 2 : i64} -> tensor<2x40x8xf32>
  return %y : tensor<2x40x8xf32>
}
