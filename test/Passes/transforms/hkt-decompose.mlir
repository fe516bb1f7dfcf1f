// RUN: hkt-opt %s --split-input-file --hkt-decompose | FileCheck %s

// A full layer: three levels, hybrid head, key lengths.
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x9x4xf32>, %[[WQ:[^:]+]]: tensor<3x4x4xf32>, %[[WK:[^:]+]]: tensor<3x4x4xf32>, %[[WV:[^:]+]]: tensor<4x4xf32>, %[[WO:[^:]+]]: tensor<4x4xf32>, %[[TH:[^:]+]]: tensor<2x3xf32>, %[[DW:[^:]+]]: tensor<2x4x3xf32>, %[[DB:[^:]+]]: tensor<2x4xf32>, %[[U:[^:]+]]: tensor<4x3xf32>, %[[G:[^:]+]]: tensor<2xf32>, %[[LEN:[^:]+]]: tensor<2xi32>)
// CHECK: %[[INIT:.+]] = tensor.empty() : tensor<2x9x4xf32>
//   V = X Wv on the (B*T) x D view.
// CHECK: %[[X2:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<2x9x4xf32> into tensor<18x4xf32>
// CHECK: %[[VMM:.+]] = linalg.matmul ins(%[[X2]], %[[WV]] : tensor<18x4xf32>, tensor<4x4xf32>)
// CHECK: %[[V:.+]] = tensor.expand_shape %[[VMM]]
//   Level 0.
// CHECK: tensor.extract_slice %[[WQ]][0, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<3x4x4xf32> to tensor<4x4xf32>
// CHECK: tensor.extract_slice %[[WK]][0, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<3x4x4xf32> to tensor<4x4xf32>
// CHECK: %[[S0:.+]] = hkt.level_scores ins({{.*}} : tensor<2x9x4xf32>, tensor<2x9x4xf32>) outs({{.*}} : tensor<2x2x9x9xf32>)
//   Level 1: downsample X, project, score, upsample by 2.
// CHECK: %[[X1:.+]] = hkt.downsample ins(%[[X]], {{.*}} : tensor<2x9x4xf32>, tensor<4x3xf32>, tensor<4xf32>) outs({{.*}} : tensor<2x5x4xf32>) stride = 2
// CHECK: tensor.extract_slice %[[WQ]][1, 0, 0]
// CHECK: %[[S1:.+]] = hkt.level_scores {{.*}} -> tensor<2x2x5x5xf32>
// CHECK: %[[U1:.+]] = hkt.upsample ins(%[[S1]] : tensor<2x2x5x5xf32>) outs({{.*}} : tensor<2x2x9x9xf32>) factor = 2
//   Level 2 downsamples level 1, not X.
// CHECK: %[[X2L:.+]] = hkt.downsample ins(%[[X1]], {{.*}} outs({{.*}} : tensor<2x3x4xf32>) stride = 2
// CHECK: tensor.extract_slice %[[WQ]][2, 0, 0]
// CHECK: %[[S2:.+]] = hkt.level_scores {{.*}} -> tensor<2x2x3x3xf32>
// CHECK: %[[U2:.+]] = hkt.upsample ins(%[[S2]] : tensor<2x2x3x3xf32>) outs({{.*}} : tensor<2x2x9x9xf32>) factor = 4
//   Fusion, masks, softmax over keys, A V, hybrid head, output projection into the destination.
// CHECK: %[[F:.+]] = hkt.convex_fuse ins(%[[S0]], %[[U1]], %[[U2]] : {{.*}}) theta(%[[TH]] : tensor<2x3xf32>)
// CHECK: %[[M:.+]] = hkt.mask ins(%[[F]] : tensor<2x2x9x9xf32>) lengths(%[[LEN]] : tensor<2xi32>) outs({{.*}}) {causal = true}
// CHECK: %[[P:.+]] = linalg.softmax dimension(3) ins(%[[M]] : tensor<2x2x9x9xf32>)
// CHECK: %[[A:.+]] = hkt.attend ins(%[[P]], %[[V]] : tensor<2x2x9x9xf32>, tensor<2x9x4xf32>)
// CHECK: %[[O:.+]] = hkt.hybrid ins(%[[A]], %[[V]], %[[U]], %[[G]] :
// CHECK: %[[O2:.+]] = tensor.collapse_shape %[[O]]
// The destination is empty: the matmul accumulates in a 2-D tensor of its own.
// CHECK: %[[D2:.+]] = tensor.empty() : tensor<18x4xf32>
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[D2]] : tensor<18x4xf32>)
// CHECK: %[[Y:.+]] = linalg.matmul ins(%[[O2]], %[[WO]] : tensor<18x4xf32>, tensor<4x4xf32>) outs(%[[Z]] : tensor<18x4xf32>)
// CHECK: %[[YE:.+]] = tensor.expand_shape %[[Y]]
// CHECK: return %[[YE]]
// CHECK-NOT: hkt.attention
func.func @layer(%x: tensor<2x9x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>) -> tensor<2x9x4xf32> {
  %init = tensor.empty() : tensor<2x9x4xf32>
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x9x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>)
         downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>)
         lengths(%len : tensor<2xi32>) outs(%init : tensor<2x9x4xf32>) {causal = true, heads = 2 : i64, hybrid = true, levels = 3 : i64} -> tensor<2x9x4xf32>
  return %y : tensor<2x9x4xf32>
}

// -----

// Multi-head attention (one level, no hybrid): no downsampling, no upsampling,
// no hybrid op, no key-length operand on the mask.
// CHECK-LABEL: func.func @mha
// CHECK-NOT: hkt.downsample
// CHECK-NOT: hkt.upsample
// CHECK: hkt.level_scores
// CHECK: hkt.convex_fuse ins(%{{[[:alnum:]_]+}} : tensor<1x1x3x3xf32>)
// CHECK-SAME: theta(%{{.+}} : tensor<1x1xf32>)
// CHECK: hkt.mask ins(%{{.+}} : tensor<1x1x3x3xf32>) outs
// CHECK-NOT: causal
// CHECK: linalg.softmax
// CHECK: hkt.attend
// CHECK-NOT: hkt.hybrid
// CHECK: linalg.matmul
// CHECK: return
func.func @mha(%x: tensor<1x3x2xf32>, %wq: tensor<1x2x2xf32>, %wk: tensor<1x2x2xf32>, %wv: tensor<2x2xf32>, %wo: tensor<2x2xf32>, %theta: tensor<1x1xf32>) -> tensor<1x3x2xf32> {
  %init = tensor.empty() : tensor<1x3x2xf32>
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<1x3x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<1x1xf32>)
         outs(%init : tensor<1x3x2xf32>) {heads = 1 : i64, levels = 1 : i64} -> tensor<1x3x2xf32>
  return %y : tensor<1x3x2xf32>
}
