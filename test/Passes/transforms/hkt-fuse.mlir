// RUN: hkt-opt %s --split-input-file --hkt-fuse | FileCheck %s --check-prefix=FUSED
// The fused op's decomposition (hkt-decompose), as hkt-cpu-lower-online-attention
// starts: scaled queries, hkt.online_attention, normalisation.
// RUN: hkt-opt %s --split-input-file --hkt-fuse --hkt-decompose --canonicalize | FileCheck %s
// The fused cases must leave no score-shaped (B x H x T x T) value behind.
// RUN: hkt-opt %s --split-input-file --hkt-fuse | FileCheck %s --check-prefix=GONE

// A full layer (three levels, causal, key lengths, hybrid head): hkt-fuse
// decomposes it and fuses SPEC 3-6 into one fused_attention with the convex
// weights softmax(theta); downsampling and the hybrid head stay. Decomposed,
// d = D / H = 2, so the scale is 1/sqrt(2).
// FUSED-LABEL: func.func @layer
// FUSED: %[[LAMBDA:.+]] = linalg.softmax dimension(1) ins(%{{[^ ,]+}} : tensor<2x3xf32>)
// FUSED: %[[ATTN:[^,]+]], %{{[^ ,]+}} = hkt.fused_attention ins(%{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}} : tensor<2x9x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>)
// FUSED-SAME: keys(%{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}} : tensor<2x9x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>) values(%{{[^ ,]+}} : tensor<2x9x4xf32>)
// FUSED-SAME: weights(%[[LAMBDA]] : tensor<2x3xf32>) lengths(%{{[^ ,]+}} : tensor<2xi32>)
// FUSED-SAME: outs(%{{[^ ,]+}}, %{{[^ ,]+}} : tensor<2x9x4xf32>, tensor<2x2x9xf32>) {causal = true, factors = array<i64: 1, 2, 4>} -> tensor<2x9x4xf32>, tensor<2x2x9xf32>
// FUSED: hkt.hybrid ins(%[[ATTN]],
// FUSED-NOT: hkt.attend
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$COLS:.+]] = affine_map<(d0, d1) -> (d1 floordiv 2, d0)>
// CHECK-DAG: #[[$COL:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1, d2) -> (d0, d2 floordiv 2, d1)>
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x9x4xf32>, %[[WQ:[^:]+]]: tensor<3x4x4xf32>, %[[WK:[^:]+]]: tensor<3x4x4xf32>, %[[WV:[^:]+]]: tensor<4x4xf32>, %[[WO:[^:]+]]: tensor<4x4xf32>, %[[TH:[^:]+]]: tensor<2x3xf32>, %[[DW:[^:]+]]: tensor<2x4x3xf32>, %[[DB:[^:]+]]: tensor<2x4xf32>, %[[U:[^:]+]]: tensor<4x3xf32>, %[[G:[^:]+]]: tensor<2xf32>, %[[LEN:[^:]+]]: tensor<2xi32>)
// CHECK-DAG: %[[LOWEST:.+]] = arith.constant -3.40282347E+38 : f32
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 0.707106769 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
//   V, then the queries and keys of each level (level l > 0 from the downsampled X).
// CHECK: %[[VM:.+]] = linalg.matmul ins(%{{.+}}, %[[WV]] :
// CHECK: %[[V:.+]] = tensor.expand_shape %[[VM]]
// CHECK: %[[WQ0:.+]] = tensor.extract_slice %[[WQ]][0, 0, 0]
// CHECK: %[[QM0:.+]] = linalg.matmul ins(%{{.+}}, %[[WQ0]] :
// CHECK: %[[Q0:.+]] = tensor.expand_shape %[[QM0]]
// CHECK: %[[WK0:.+]] = tensor.extract_slice %[[WK]][0, 0, 0]
// CHECK: %[[KM0:.+]] = linalg.matmul ins(%{{.+}}, %[[WK0]] :
// CHECK: %[[K0:.+]] = tensor.expand_shape %[[KM0]]
// CHECK: %[[X1:.+]] = hkt.downsample ins(%[[X]], {{.*}} outs({{.*}} : tensor<2x5x4xf32>) stride = 2
// CHECK: %[[WQ1:.+]] = tensor.extract_slice %[[WQ]][1, 0, 0]
// CHECK: %[[QM1:.+]] = linalg.matmul ins(%{{.+}}, %[[WQ1]] :
// CHECK: %[[Q1:.+]] = tensor.expand_shape %[[QM1]]
// CHECK: %[[WK1:.+]] = tensor.extract_slice %[[WK]][1, 0, 0]
// CHECK: %[[KM1:.+]] = linalg.matmul ins(%{{.+}}, %[[WK1]] :
// CHECK: %[[K1:.+]] = tensor.expand_shape %[[KM1]]
// CHECK: hkt.downsample ins(%[[X1]], {{.*}} outs({{.*}} : tensor<2x3x4xf32>) stride = 2
// CHECK: %[[WQ2:.+]] = tensor.extract_slice %[[WQ]][2, 0, 0]
// CHECK: %[[QM2:.+]] = linalg.matmul ins(%{{.+}}, %[[WQ2]] :
// CHECK: %[[Q2:.+]] = tensor.expand_shape %[[QM2]]
// CHECK: %[[WK2:.+]] = tensor.extract_slice %[[WK]][2, 0, 0]
// CHECK: %[[KM2:.+]] = linalg.matmul ins(%{{.+}}, %[[WK2]] :
// CHECK: %[[K2:.+]] = tensor.expand_shape %[[KM2]]
//   The destination of the decomposed hkt.attend.
// CHECK: %[[AINIT:.+]] = tensor.empty() : tensor<2x9x4xf32>
//   lambda = softmax(theta) over the levels, folded with 1/sqrt(d) into each level's queries.
// CHECK: %[[LAMBDA:.+]] = linalg.softmax dimension(1) ins(%[[TH]] : tensor<2x3xf32>) outs(%{{.+}} : tensor<2x3xf32>)
//   Per level and column: lambda[c / d, l] / sqrt(d), then q_l times its row.
// CHECK: %[[W:.+]] = linalg.generic {indexing_maps = [#[[$COLS]], #{{.+}}], iterator_types = ["parallel", "parallel"]} ins(%[[LAMBDA]] : tensor<2x3xf32>) outs(%{{.+}} : tensor<3x4xf32>)
// CHECK-NEXT: ^bb0(%[[LA:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[WA:.+]] = arith.mulf %[[LA]], %[[SCALE]] : f32
// CHECK-NEXT: linalg.yield %[[WA]] : f32
// CHECK: %[[W0:.+]] = tensor.extract_slice %[[W]][0, 0] [1, 4] [1, 1] : tensor<3x4xf32> to tensor<4xf32>
// CHECK: %[[SQ0:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[Q0]], %[[W0]] : tensor<2x9x4xf32>, tensor<4xf32>) outs(%{{.+}} : tensor<2x9x4xf32>)
// CHECK-NEXT: ^bb0(%[[Q0A:.+]]: f32, %[[W0A:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[R0:.+]] = arith.mulf %[[Q0A]], %[[W0A]] : f32
// CHECK-NEXT: linalg.yield %[[R0]] : f32
// CHECK: %[[W1:.+]] = tensor.extract_slice %[[W]][1, 0] [1, 4] [1, 1] : tensor<3x4xf32> to tensor<4xf32>
// CHECK: %[[SQ1:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[Q1]], %[[W1]] : tensor<2x5x4xf32>, tensor<4xf32>) outs(%{{.+}} : tensor<2x5x4xf32>)
// CHECK-NEXT: ^bb0(%[[Q1A:.+]]: f32, %[[W1A:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[R1:.+]] = arith.mulf %[[Q1A]], %[[W1A]] : f32
// CHECK-NEXT: linalg.yield %[[R1]] : f32
// CHECK: %[[W2:.+]] = tensor.extract_slice %[[W]][2, 0] [1, 4] [1, 1] : tensor<3x4xf32> to tensor<4xf32>
// CHECK: %[[SQ2:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[Q2]], %[[W2]] : tensor<2x3x4xf32>, tensor<4xf32>) outs(%{{.+}} : tensor<2x3x4xf32>)
// CHECK-NEXT: ^bb0(%[[Q2A:.+]]: f32, %[[W2A:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[R2:.+]] = arith.mulf %[[Q2A]], %[[W2A]] : f32
// CHECK-NEXT: linalg.yield %[[R2]] : f32
//   Running state: acc = 0, max = the lowest finite float (not -inf), sum = 0.
// CHECK: %[[ACC0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<2x9x4xf32>)
// CHECK: %[[MAX0:.+]] = linalg.fill ins(%[[LOWEST]] : f32) outs(%{{.+}} : tensor<2x2x9xf32>)
// CHECK: %[[SUM0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<2x2x9xf32>)
// CHECK: %[[ACC:[^,]+]], %{{[^,]+}}, %[[SUM:[^ ]+]] = hkt.online_attention ins(%[[SQ0]], %[[SQ1]], %[[SQ2]] : tensor<2x9x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>)
// CHECK-SAME: keys(%[[K0]], %[[K1]], %[[K2]] : tensor<2x9x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>)
// CHECK-SAME: values(%[[V]] : tensor<2x9x4xf32>) lengths(%[[LEN]] : tensor<2xi32>)
// CHECK-SAME: outs(%[[ACC0]], %[[MAX0]], %[[SUM0]] : tensor<2x9x4xf32>, tensor<2x2x9xf32>, tensor<2x2x9xf32>) {causal = true, factors = array<i64: 1, 2, 4>}
//   attn = acc / sum (0 where sum <= 0) into the attend's destination.
// CHECK: %[[ATTN:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[ACC]], %[[SUM]] : tensor<2x9x4xf32>, tensor<2x2x9xf32>) outs(%[[AINIT]] : tensor<2x9x4xf32>)
// CHECK-NEXT: ^bb0(%[[A:.+]]: f32, %[[S:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[EMPTY:.+]] = arith.cmpf ole, %[[S]], %[[ZERO]] : f32
// CHECK-NEXT: %[[DIV:.+]] = arith.divf %[[A]], %[[S]] : f32
// CHECK-NEXT: %[[SEL:.+]] = arith.select %[[EMPTY]], %[[ZERO]], %[[DIV]] : f32
// CHECK-NEXT: linalg.yield %[[SEL]] : f32
// CHECK: hkt.hybrid ins(%[[ATTN]], %[[V]], %[[U]], %[[G]] :
// CHECK: linalg.matmul ins(%{{.+}}, %[[WO]] :
// CHECK: return
// GONE-LABEL: func.func @layer
// GONE-NOT: hkt.attention
// GONE-NOT: hkt.level_scores
// GONE-NOT: hkt.upsample
// GONE-NOT: hkt.convex_fuse
// GONE-NOT: hkt.mask
// GONE-NOT: dimension(3)
// GONE-NOT: hkt.attend
// GONE-NOT: 2x2x9x9
// GONE-NOT: 2x2x5x5
// GONE-NOT: 2x2x3x3
// GONE: return
func.func @layer(%x: tensor<2x9x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>) -> tensor<2x9x4xf32> {
  %init = tensor.empty() : tensor<2x9x4xf32>
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x9x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>)
         downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>)
         lengths(%len : tensor<2xi32>) outs(%init : tensor<2x9x4xf32>) {causal = true, heads = 2 : i64, hybrid = true, levels = 3 : i64} -> tensor<2x9x4xf32>
  return %y : tensor<2x9x4xf32>
}

// -----

// The same chain written by hand (two levels, not causal, no key lengths):
// d = 8 / 2 = 4, so the scale is 1/2; the keys and values are used as they are.
// FUSED-LABEL: func.func @steps
// FUSED: %[[A:[^,]+]], %{{[^ ,]+}} = hkt.fused_attention {{.*}} {factors = array<i64: 1, 2>} -> tensor<2x7x8xf32>, tensor<2x2x7xf32>
// FUSED: return %[[A]]
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$COLS:.+]] = affine_map<(d0, d1) -> (d1 floordiv 4, d0)>
// CHECK-DAG: #[[$COL:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1, d2) -> (d0, d2 floordiv 4, d1)>
// CHECK-LABEL: func.func @steps
// CHECK-SAME: (%[[Q0:[^:]+]]: tensor<2x7x8xf32>, %[[K0:[^:]+]]: tensor<2x7x8xf32>, %[[Q1:[^:]+]]: tensor<2x4x8xf32>, %[[K1:[^:]+]]: tensor<2x4x8xf32>, %[[TH:[^:]+]]: tensor<2x2xf32>, %[[V:[^:]+]]: tensor<2x7x8xf32>, %[[INIT:[^:]+]]: tensor<2x7x8xf32>)
// CHECK-DAG: %[[LOWEST:.+]] = arith.constant -3.40282347E+38 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[LAMBDA:.+]] = linalg.softmax dimension(1) ins(%[[TH]] : tensor<2x2xf32>)
// CHECK: %[[W:.+]] = linalg.generic {indexing_maps = [#[[$COLS]], #{{.+}}], {{.*}} ins(%[[LAMBDA]] : tensor<2x2xf32>) outs(%{{.+}} : tensor<2x8xf32>)
// CHECK: arith.mulf %{{.+}}, %[[SCALE]] : f32
// CHECK: %[[W0:.+]] = tensor.extract_slice %[[W]][0, 0] [1, 8] [1, 1]
// CHECK: %[[SQ0:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$ID]]], {{.*}} ins(%[[Q0]], %[[W0]] : tensor<2x7x8xf32>, tensor<8xf32>)
// CHECK: %[[W1:.+]] = tensor.extract_slice %[[W]][1, 0] [1, 8] [1, 1]
// CHECK: %[[SQ1:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$ID]]], {{.*}} ins(%[[Q1]], %[[W1]] : tensor<2x4x8xf32>, tensor<8xf32>)
// CHECK: %[[ACC0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<2x7x8xf32>)
// CHECK: %[[MAX0:.+]] = linalg.fill ins(%[[LOWEST]] : f32) outs(%{{.+}} : tensor<2x2x7xf32>)
// CHECK: %[[SUM0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<2x2x7xf32>)
// CHECK: %[[ACC:[^,]+]], %{{[^,]+}}, %[[SUM:[^ ]+]] = hkt.online_attention ins(%[[SQ0]], %[[SQ1]] : tensor<2x7x8xf32>, tensor<2x4x8xf32>) keys(%[[K0]], %[[K1]] : tensor<2x7x8xf32>, tensor<2x4x8xf32>) values(%[[V]] : tensor<2x7x8xf32>) outs(%[[ACC0]], %[[MAX0]], %[[SUM0]] : tensor<2x7x8xf32>, tensor<2x2x7xf32>, tensor<2x2x7xf32>) {factors = array<i64: 1, 2>}
// CHECK: %[[ATTN:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]], {{.*}} ins(%[[ACC]], %[[SUM]] : tensor<2x7x8xf32>, tensor<2x2x7xf32>) outs(%[[INIT]] : tensor<2x7x8xf32>)
// CHECK: arith.divf
// CHECK: return %[[ATTN]]
// GONE-LABEL: func.func @steps
// GONE-NOT: hkt.level_scores
// GONE-NOT: hkt.upsample
// GONE-NOT: hkt.convex_fuse
// GONE-NOT: hkt.mask
// GONE-NOT: dimension(3)
// GONE-NOT: hkt.attend
// GONE-NOT: 2x2x7x7
// GONE-NOT: 2x2x4x4
// GONE: return
func.func @steps(%q0: tensor<2x7x8xf32>, %k0: tensor<2x7x8xf32>, %q1: tensor<2x4x8xf32>, %k1: tensor<2x4x8xf32>, %theta: tensor<2x2xf32>, %v: tensor<2x7x8xf32>, %init: tensor<2x7x8xf32>) -> tensor<2x7x8xf32> {
  %e = tensor.empty() : tensor<2x2x7x7xf32>
  %e1 = tensor.empty() : tensor<2x2x4x4xf32>
  %s0 = hkt.level_scores ins(%q0, %k0 : tensor<2x7x8xf32>, tensor<2x7x8xf32>) outs(%e : tensor<2x2x7x7xf32>) -> tensor<2x2x7x7xf32>
  %s1 = hkt.level_scores ins(%q1, %k1 : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%e1 : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %u1 = hkt.upsample ins(%s1 : tensor<2x2x4x4xf32>) outs(%e : tensor<2x2x7x7xf32>) factor = 2 -> tensor<2x2x7x7xf32>
  %f = hkt.convex_fuse ins(%s0, %u1 : tensor<2x2x7x7xf32>, tensor<2x2x7x7xf32>) theta(%theta : tensor<2x2xf32>) outs(%e : tensor<2x2x7x7xf32>) -> tensor<2x2x7x7xf32>
  %m = hkt.mask ins(%f : tensor<2x2x7x7xf32>) outs(%e : tensor<2x2x7x7xf32>) -> tensor<2x2x7x7xf32>
  %p = linalg.softmax dimension(3) ins(%m : tensor<2x2x7x7xf32>) outs(%e : tensor<2x2x7x7xf32>) -> tensor<2x2x7x7xf32>
  %a = hkt.attend ins(%p, %v : tensor<2x2x7x7xf32>, tensor<2x7x8xf32>) outs(%init : tensor<2x7x8xf32>) -> tensor<2x7x8xf32>
  return %a : tensor<2x7x8xf32>
}

// -----

// Chains left alone (they still lower through the reference path).
// Upsampling written as a linalg.generic, not hkt.upsample (even the same
// nearest-neighbour maths is not recognised).
// CHECK-LABEL: func.func @generic_upsample
// CHECK-NOT: hkt.online_attention
// FUSED-LABEL: func.func @generic_upsample
// FUSED-NOT: hkt.fused_attention
// CHECK: %[[S0:.+]] = hkt.level_scores
// CHECK: %[[S1:.+]] = hkt.level_scores
// CHECK: %[[U1:.+]] = linalg.generic {{.*}} ins(%[[S1]] : tensor<1x2x3x3xf32>) outs(%{{.+}} : tensor<1x2x5x5xf32>)
// CHECK: %[[F:.+]] = hkt.convex_fuse ins(%[[S0]], %[[U1]] :
// CHECK: %[[M:.+]] = hkt.mask ins(%[[F]] :
// CHECK: %[[P:.+]] = linalg.softmax dimension(3) ins(%[[M]] :
// CHECK: %[[A:.+]] = hkt.attend ins(%[[P]], %{{.+}} :
// CHECK-NOT: hkt.online_attention
// CHECK: return %[[A]]
#nearest = affine_map<(b, h, i, j) -> (b, h, i floordiv 2, j floordiv 2)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
func.func @generic_upsample(%q0: tensor<1x5x4xf32>, %k0: tensor<1x5x4xf32>, %q1: tensor<1x3x4xf32>, %k1: tensor<1x3x4xf32>, %theta: tensor<2x2xf32>, %v: tensor<1x5x4xf32>, %init: tensor<1x5x4xf32>) -> tensor<1x5x4xf32> {
  %e = tensor.empty() : tensor<1x2x5x5xf32>
  %e1 = tensor.empty() : tensor<1x2x3x3xf32>
  %s0 = hkt.level_scores ins(%q0, %k0 : tensor<1x5x4xf32>, tensor<1x5x4xf32>) outs(%e : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %s1 = hkt.level_scores ins(%q1, %k1 : tensor<1x3x4xf32>, tensor<1x3x4xf32>) outs(%e1 : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %u1 = linalg.generic {indexing_maps = [#nearest, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s1 : tensor<1x2x3x3xf32>) outs(%e : tensor<1x2x5x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x2x5x5xf32>
  %f = hkt.convex_fuse ins(%s0, %u1 : tensor<1x2x5x5xf32>, tensor<1x2x5x5xf32>) theta(%theta : tensor<2x2xf32>) outs(%e : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %m = hkt.mask ins(%f : tensor<1x2x5x5xf32>) outs(%e : tensor<1x2x5x5xf32>) {causal = true} -> tensor<1x2x5x5xf32>
  %p = linalg.softmax dimension(3) ins(%m : tensor<1x2x5x5xf32>) outs(%e : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %a = hkt.attend ins(%p, %v : tensor<1x2x5x5xf32>, tensor<1x5x4xf32>) outs(%init : tensor<1x5x4xf32>) -> tensor<1x5x4xf32>
  return %a : tensor<1x5x4xf32>
}

// -----

// A level score with a second user (it is also returned): fusing would have
// to materialise it anyway.
// CHECK-LABEL: func.func @score_two_users
// FUSED-LABEL: func.func @score_two_users
// FUSED-NOT: hkt.fused_attention
// CHECK-NOT: hkt.online_attention
// CHECK: %[[S0:.+]] = hkt.level_scores
// CHECK: %[[S1:.+]] = hkt.level_scores
// CHECK: %[[U1:.+]] = hkt.upsample ins(%[[S1]] :
// CHECK: %[[F:.+]] = hkt.convex_fuse ins(%[[S0]], %[[U1]] :
// CHECK: %[[M:.+]] = hkt.mask ins(%[[F]] :
// CHECK: %[[P:.+]] = linalg.softmax dimension(3) ins(%[[M]] :
// CHECK: %[[A:.+]] = hkt.attend ins(%[[P]], %{{.+}} :
// CHECK-NOT: hkt.online_attention
// CHECK: return %[[A]], %[[S1]]
func.func @score_two_users(%q0: tensor<1x5x4xf32>, %k0: tensor<1x5x4xf32>, %q1: tensor<1x3x4xf32>, %k1: tensor<1x3x4xf32>, %theta: tensor<2x2xf32>, %v: tensor<1x5x4xf32>, %init: tensor<1x5x4xf32>) -> (tensor<1x5x4xf32>, tensor<1x2x3x3xf32>) {
  %e = tensor.empty() : tensor<1x2x5x5xf32>
  %e1 = tensor.empty() : tensor<1x2x3x3xf32>
  %s0 = hkt.level_scores ins(%q0, %k0 : tensor<1x5x4xf32>, tensor<1x5x4xf32>) outs(%e : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %s1 = hkt.level_scores ins(%q1, %k1 : tensor<1x3x4xf32>, tensor<1x3x4xf32>) outs(%e1 : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %u1 = hkt.upsample ins(%s1 : tensor<1x2x3x3xf32>) outs(%e : tensor<1x2x5x5xf32>) factor = 2 -> tensor<1x2x5x5xf32>
  %f = hkt.convex_fuse ins(%s0, %u1 : tensor<1x2x5x5xf32>, tensor<1x2x5x5xf32>) theta(%theta : tensor<2x2xf32>) outs(%e : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %m = hkt.mask ins(%f : tensor<1x2x5x5xf32>) outs(%e : tensor<1x2x5x5xf32>) {causal = true} -> tensor<1x2x5x5xf32>
  %p = linalg.softmax dimension(3) ins(%m : tensor<1x2x5x5xf32>) outs(%e : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %a = hkt.attend ins(%p, %v : tensor<1x2x5x5xf32>, tensor<1x5x4xf32>) outs(%init : tensor<1x5x4xf32>) -> tensor<1x5x4xf32>
  return %a, %s1 : tensor<1x5x4xf32>, tensor<1x2x3x3xf32>
}

// -----

// Level 0 upsampled (the factor is on the first score): the online form
// indexes every level from a full-resolution level 0.
// CHECK-LABEL: func.func @level0_upsampled
// FUSED-LABEL: func.func @level0_upsampled
// FUSED-NOT: hkt.fused_attention
// CHECK-NOT: hkt.online_attention
// CHECK: %[[S0:.+]] = hkt.level_scores
// CHECK: %[[U0:.+]] = hkt.upsample ins(%[[S0]] : tensor<1x2x3x3xf32>) outs(%{{.+}} : tensor<1x2x5x5xf32>) factor = 2
// CHECK: %[[S1:.+]] = hkt.level_scores
// CHECK: %[[F:.+]] = hkt.convex_fuse ins(%[[U0]], %[[S1]] :
// CHECK: %[[M:.+]] = hkt.mask ins(%[[F]] :
// CHECK: %[[P:.+]] = linalg.softmax dimension(3) ins(%[[M]] :
// CHECK: %[[A:.+]] = hkt.attend ins(%[[P]], %{{.+}} :
// CHECK-NOT: hkt.online_attention
// CHECK: return %[[A]]
func.func @level0_upsampled(%q0: tensor<1x3x4xf32>, %k0: tensor<1x3x4xf32>, %q1: tensor<1x5x4xf32>, %k1: tensor<1x5x4xf32>, %theta: tensor<2x2xf32>, %v: tensor<1x5x4xf32>, %init: tensor<1x5x4xf32>) -> tensor<1x5x4xf32> {
  %e = tensor.empty() : tensor<1x2x5x5xf32>
  %e0 = tensor.empty() : tensor<1x2x3x3xf32>
  %s0 = hkt.level_scores ins(%q0, %k0 : tensor<1x3x4xf32>, tensor<1x3x4xf32>) outs(%e0 : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %u0 = hkt.upsample ins(%s0 : tensor<1x2x3x3xf32>) outs(%e : tensor<1x2x5x5xf32>) factor = 2 -> tensor<1x2x5x5xf32>
  %s1 = hkt.level_scores ins(%q1, %k1 : tensor<1x5x4xf32>, tensor<1x5x4xf32>) outs(%e : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %f = hkt.convex_fuse ins(%u0, %s1 : tensor<1x2x5x5xf32>, tensor<1x2x5x5xf32>) theta(%theta : tensor<2x2xf32>) outs(%e : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %m = hkt.mask ins(%f : tensor<1x2x5x5xf32>) outs(%e : tensor<1x2x5x5xf32>) {causal = true} -> tensor<1x2x5x5xf32>
  %p = linalg.softmax dimension(3) ins(%m : tensor<1x2x5x5xf32>) outs(%e : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %a = hkt.attend ins(%p, %v : tensor<1x2x5x5xf32>, tensor<1x5x4xf32>) outs(%init : tensor<1x5x4xf32>) -> tensor<1x5x4xf32>
  return %a : tensor<1x5x4xf32>
}

// -----

// A softmax over the query dimension (2) is not attention over keys.
// CHECK-LABEL: func.func @softmax_over_queries
// FUSED-LABEL: func.func @softmax_over_queries
// FUSED-NOT: hkt.fused_attention
// CHECK-NOT: hkt.online_attention
// CHECK: %[[S0:.+]] = hkt.level_scores
// CHECK: %[[S1:.+]] = hkt.level_scores
// CHECK: %[[U1:.+]] = hkt.upsample ins(%[[S1]] :
// CHECK: %[[F:.+]] = hkt.convex_fuse ins(%[[S0]], %[[U1]] :
// CHECK: %[[M:.+]] = hkt.mask ins(%[[F]] :
// CHECK: %[[P:.+]] = linalg.softmax dimension(2) ins(%[[M]] :
// CHECK: %[[A:.+]] = hkt.attend ins(%[[P]], %{{.+}} :
// CHECK-NOT: hkt.online_attention
// CHECK: return %[[A]]
func.func @softmax_over_queries(%q0: tensor<1x5x4xf32>, %k0: tensor<1x5x4xf32>, %q1: tensor<1x3x4xf32>, %k1: tensor<1x3x4xf32>, %theta: tensor<2x2xf32>, %v: tensor<1x5x4xf32>, %init: tensor<1x5x4xf32>) -> tensor<1x5x4xf32> {
  %e = tensor.empty() : tensor<1x2x5x5xf32>
  %e1 = tensor.empty() : tensor<1x2x3x3xf32>
  %s0 = hkt.level_scores ins(%q0, %k0 : tensor<1x5x4xf32>, tensor<1x5x4xf32>) outs(%e : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %s1 = hkt.level_scores ins(%q1, %k1 : tensor<1x3x4xf32>, tensor<1x3x4xf32>) outs(%e1 : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %u1 = hkt.upsample ins(%s1 : tensor<1x2x3x3xf32>) outs(%e : tensor<1x2x5x5xf32>) factor = 2 -> tensor<1x2x5x5xf32>
  %f = hkt.convex_fuse ins(%s0, %u1 : tensor<1x2x5x5xf32>, tensor<1x2x5x5xf32>) theta(%theta : tensor<2x2xf32>) outs(%e : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %m = hkt.mask ins(%f : tensor<1x2x5x5xf32>) outs(%e : tensor<1x2x5x5xf32>) {causal = true} -> tensor<1x2x5x5xf32>
  %p = linalg.softmax dimension(2) ins(%m : tensor<1x2x5x5xf32>) outs(%e : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %a = hkt.attend ins(%p, %v : tensor<1x2x5x5xf32>, tensor<1x5x4xf32>) outs(%init : tensor<1x5x4xf32>) -> tensor<1x5x4xf32>
  return %a : tensor<1x5x4xf32>
}

// -----

// A dynamic sequence length fuses: the online form tiles the sequence, and
// its destinations take their sizes from the operands.
// FUSED-LABEL: func.func @dynamic_length
// FUSED: %[[T:.+]] = tensor.dim %{{.+}}, %{{.+}} : tensor<1x2x?x?xf32>
// FUSED: %[[LSE:.+]] = tensor.empty(%[[T]]) : tensor<1x2x?xf32>
// FUSED: hkt.fused_attention ins(%{{[^ ,]+}} : tensor<1x?x4xf32>)
// FUSED-SAME: outs(%{{[^ ,]+}}, %[[LSE]] : tensor<1x?x4xf32>, tensor<1x2x?xf32>)
// FUSED-NOT: hkt.attend
// CHECK-LABEL: func.func @dynamic_length
// CHECK: hkt.online_attention
// CHECK-SAME: -> tensor<1x?x4xf32>, tensor<1x2x?xf32>, tensor<1x2x?xf32>
func.func @dynamic_length(%q: tensor<1x?x4xf32>, %k: tensor<1x?x4xf32>, %v: tensor<1x?x4xf32>, %theta: tensor<2x1xf32>, %e: tensor<1x2x?x?xf32>, %o: tensor<1x?x4xf32>) -> tensor<1x?x4xf32> {
  %s = hkt.level_scores ins(%q, %k : tensor<1x?x4xf32>, tensor<1x?x4xf32>) outs(%e : tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %f = hkt.convex_fuse ins(%s : tensor<1x2x?x?xf32>) theta(%theta : tensor<2x1xf32>) outs(%e : tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %m = hkt.mask ins(%f : tensor<1x2x?x?xf32>) outs(%e : tensor<1x2x?x?xf32>) {causal = true} -> tensor<1x2x?x?xf32>
  %p = linalg.softmax dimension(3) ins(%m : tensor<1x2x?x?xf32>) outs(%e : tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %a = hkt.attend ins(%p, %v : tensor<1x2x?x?xf32>, tensor<1x?x4xf32>) outs(%o : tensor<1x?x4xf32>) -> tensor<1x?x4xf32>
  return %a : tensor<1x?x4xf32>
}

// -----

// A dynamic batch is not tiled by the online form (the CPU lowering splits
// rows by batch and head statically): the chain stays on the reference path.
// CHECK-LABEL: func.func @dynamic_batch
// FUSED-LABEL: func.func @dynamic_batch
// FUSED-NOT: hkt.fused_attention
// CHECK-NOT: hkt.online_attention
// CHECK: hkt.attend
func.func @dynamic_batch(%q: tensor<?x5x4xf32>, %k: tensor<?x5x4xf32>, %v: tensor<?x5x4xf32>, %theta: tensor<2x1xf32>, %e: tensor<?x2x5x5xf32>, %o: tensor<?x5x4xf32>) -> tensor<?x5x4xf32> {
  %s = hkt.level_scores ins(%q, %k : tensor<?x5x4xf32>, tensor<?x5x4xf32>) outs(%e : tensor<?x2x5x5xf32>) -> tensor<?x2x5x5xf32>
  %f = hkt.convex_fuse ins(%s : tensor<?x2x5x5xf32>) theta(%theta : tensor<2x1xf32>) outs(%e : tensor<?x2x5x5xf32>) -> tensor<?x2x5x5xf32>
  %m = hkt.mask ins(%f : tensor<?x2x5x5xf32>) outs(%e : tensor<?x2x5x5xf32>) {causal = true} -> tensor<?x2x5x5xf32>
  %p = linalg.softmax dimension(3) ins(%m : tensor<?x2x5x5xf32>) outs(%e : tensor<?x2x5x5xf32>) -> tensor<?x2x5x5xf32>
  %a = hkt.attend ins(%p, %v : tensor<?x2x5x5xf32>, tensor<?x5x4xf32>) outs(%o : tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
  return %a : tensor<?x5x4xf32>
}
