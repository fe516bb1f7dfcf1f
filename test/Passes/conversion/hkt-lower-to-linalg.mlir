// RUN: hkt-opt %s --split-input-file --hkt-lower-to-linalg --verify-diagnostics | FileCheck %s

// SPEC 1: causal left padding by k-1 = 2, bias broadcast, then the taps as an
// affine access xp[b, 2*t + 2 - m, c], the channels innermost (loops b, t,
// m, c) and the weight taps-major (K x C), so every operand is read along
// the channels.
// CHECK-DAG: #[[$BIAS:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[$ID3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$TAP:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 * 2 - d2 + 2, d3)>
// CHECK-DAG: #[[$W:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[$OUT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @downsample
// CHECK-SAME: (%[[X:.+]]: tensor<2x9x4xf32>, %[[WT:.+]]: tensor<4x3xf32>, %[[B:.+]]: tensor<4xf32>, %[[I:.+]]: tensor<2x5x4xf32>)
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x11x4xf32>)
// CHECK: %[[XP:.+]] = tensor.insert_slice %[[X]] into %[[Z]][0, 2, 0] [2, 9, 4] [1, 1, 1]
// CHECK: %[[BB:.+]] = linalg.generic {indexing_maps = [#[[$BIAS]], #[[$ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[B]] : tensor<4xf32>) outs(%[[I]] : tensor<2x5x4xf32>)
// CHECK: %[[WK:.+]] = linalg.transpose ins(%[[WT]] : tensor<4x3xf32>) outs(%{{.+}} : tensor<3x4xf32>) permutation = [1, 0]
// CHECK: linalg.generic {indexing_maps = [#[[$TAP]], #[[$W]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%[[XP]], %[[WK]] : tensor<2x11x4xf32>, tensor<3x4xf32>) outs(%[[BB]] : tensor<2x5x4xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: hkt.
func.func @downsample(%x: tensor<2x9x4xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>, %i: tensor<2x5x4xf32>) -> tensor<2x5x4xf32> {
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x9x4xf32>, tensor<4x3xf32>, tensor<4xf32>) outs(%i : tensor<2x5x4xf32>) stride = 2 -> tensor<2x5x4xf32>
  return %y : tensor<2x5x4xf32>
}

// -----

// SPEC 3: heads split from D, contraction over the head width, scaled by 1/sqrt(d) = 1/sqrt(2).
// CHECK-DAG: #[[$Q:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>
// CHECK-DAG: #[[$K:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>
// CHECK-DAG: #[[$S:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @level_scores
// CHECK: %[[QH:.+]] = tensor.expand_shape %{{.+}} {{\[\[}}0], [1], [2, 3]] output_shape [1, 3, 2, 2] : tensor<1x3x4xf32> into tensor<1x3x2x2xf32>
// CHECK: %[[KH:.+]] = tensor.expand_shape
// CHECK: %[[SCALE:.+]] = arith.constant 0.707106769
// CHECK: linalg.generic {indexing_maps = [#[[$Q]], #[[$K]], #[[$S]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[QH]], %[[KH]] : tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>)
// CHECK: %[[P:.+]] = arith.mulf
// CHECK: arith.mulf %[[P]], %[[SCALE]]
func.func @level_scores(%q: tensor<1x3x4xf32>, %k: tensor<1x3x4xf32>, %i: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %s = hkt.level_scores ins(%q, %k : tensor<1x3x4xf32>, tensor<1x3x4xf32>) outs(%i : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %s : tensor<1x2x3x3xf32>
}

// -----

// SPEC 4: nearest upsampling is a floordiv access.
// CHECK-DAG: #[[$IN:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 floordiv 4, d3 floordiv 4)>
// CHECK-LABEL: func.func @upsample
// CHECK: linalg.generic {indexing_maps = [#[[$IN]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%{{.+}} : tensor<1x1x2x2xf32>) outs(%{{.+}} : tensor<1x1x5x5xf32>)
// CHECK-NEXT: ^bb0(%[[A:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: linalg.yield %[[A]] : f32
func.func @upsample(%s: tensor<1x1x2x2xf32>, %e: tensor<1x1x5x5xf32>) -> tensor<1x1x5x5xf32> {
  %u = hkt.upsample ins(%s : tensor<1x1x2x2xf32>) outs(%e : tensor<1x1x5x5xf32>) factor = 4 -> tensor<1x1x5x5xf32>
  return %u : tensor<1x1x5x5xf32>
}

// -----

// SPEC 4: lambda = softmax(theta) over levels (decomposed), then a weighted sum.
// CHECK-DAG: #[[$L0:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, 0)>
// CHECK-DAG: #[[$L1:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, 1)>
// CHECK-LABEL: func.func @convex_fuse
// CHECK-SAME: (%[[S0:[^:]+]]: tensor<1x2x3x3xf32>, %[[S1:[^:]+]]: tensor<1x2x3x3xf32>, %[[T:[^:]+]]: tensor<2x2xf32>
// CHECK: linalg.generic {{.*}} ins(%[[T]] : tensor<2x2xf32>)
// CHECK: arith.maxnumf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: %[[LAMBDA:.+]] = linalg.generic
// CHECK: arith.divf
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #[[$L0]], #[[$L1]], #{{.+}}], {{.*}} ins(%[[S0]], %[[S1]], %[[LAMBDA]], %[[LAMBDA]] :
// CHECK-NEXT: ^bb0(%[[A0:.+]]: f32, %[[A1:.+]]: f32, %[[W0:.+]]: f32, %[[W1:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[T0:.+]] = arith.mulf %[[W0]], %[[A0]]
// CHECK-NEXT: %[[T1:.+]] = arith.mulf %[[W1]], %[[A1]]
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[T0]], %[[T1]]
// CHECK-NEXT: linalg.yield %[[SUM]]
func.func @convex_fuse(%s0: tensor<1x2x3x3xf32>, %s1: tensor<1x2x3x3xf32>, %theta: tensor<2x2xf32>, %i: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %f = hkt.convex_fuse ins(%s0, %s1 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) theta(%theta : tensor<2x2xf32>) outs(%i : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %f : tensor<1x2x3x3xf32>
}

// -----

// SPEC 5: -inf where j > i or j >= lengths[b].
// CHECK-DAG: #[[$LEN:.+]] = affine_map<(d0, d1, d2, d3) -> (d0)>
// CHECK-LABEL: func.func @mask
// CHECK: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[$LEN]], #{{.+}}],
// CHECK-NEXT: ^bb0(%[[S:.+]]: f32, %[[L:.+]]: i32, %{{.+}}: f32):
// CHECK-DAG: %[[I:.+]] = linalg.index 2
// CHECK-DAG: %[[J:.+]] = linalg.index 3
// CHECK: %[[LI:.+]] = arith.index_cast %[[L]] : i32 to index
// CHECK: %[[PAST:.+]] = arith.cmpi sge, %[[J]], %[[LI]]
// CHECK: %[[FUT:.+]] = arith.cmpi sgt, %[[J]], %[[I]]
// CHECK: %[[DROP:.+]] = arith.ori %[[PAST]], %[[FUT]]
// CHECK: %[[R:.+]] = arith.select %[[DROP]], %[[NEGINF]], %[[S]]
// CHECK: linalg.yield %[[R]]
func.func @mask(%s: tensor<2x1x3x3xf32>, %len: tensor<2xi32>, %i: tensor<2x1x3x3xf32>) -> tensor<2x1x3x3xf32> {
  %m = hkt.mask ins(%s : tensor<2x1x3x3xf32>) lengths(%len : tensor<2xi32>) outs(%i : tensor<2x1x3x3xf32>) {causal = true} -> tensor<2x1x3x3xf32>
  return %m : tensor<2x1x3x3xf32>
}

// -----

// SPEC 6: per-head P V, heads split from D and merged back.
// CHECK-DAG: #[[$P:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$V:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>
// CHECK-DAG: #[[$O:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>
// CHECK-LABEL: func.func @attend
// CHECK: %[[VH:.+]] = tensor.expand_shape %{{.+}} {{\[\[}}0], [1], [2, 3]] output_shape [1, 3, 2, 2]
// CHECK: %[[R:.+]] = linalg.generic {indexing_maps = [#[[$P]], #[[$V]], #[[$O]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%{{.+}}, %[[VH]] :
// CHECK: tensor.collapse_shape %[[R]] {{\[\[}}0], [1], [2, 3]] : tensor<1x3x2x2xf32> into tensor<1x3x4xf32>
func.func @attend(%p: tensor<1x2x3x3xf32>, %v: tensor<1x3x4xf32>, %i: tensor<1x3x4xf32>) -> tensor<1x3x4xf32> {
  %a = hkt.attend ins(%p, %v : tensor<1x2x3x3xf32>, tensor<1x3x4xf32>) outs(%i : tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  return %a : tensor<1x3x4xf32>
}

// -----

// SPEC 7: causal depthwise convolution (left padding kc-1 = 1, channels
// innermost, taps-major weights), sigmoid(gamma) once per channel (gamma is
// indexed by head c floordiv d), then the mix along the channels.
// CHECK-DAG: #[[$TAP:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 - d2 + 1, d3)>
// CHECK-DAG: #[[$HEAD:.+]] = affine_map<(d0) -> (d0 floordiv 2)>
// CHECK-DAG: #[[$CH:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @hybrid
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 1, 0] [1, 3, 4] [1, 1, 1] : tensor<1x3x4xf32> into tensor<1x4x4xf32>
// CHECK: linalg.transpose ins(%{{.+}} : tensor<4x2xf32>) outs(%{{.+}} : tensor<2x4xf32>)
// CHECK: %[[CONV:.+]] = linalg.generic {indexing_maps = [#[[$TAP]], #{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK: %[[BETA:.+]] = linalg.generic {indexing_maps = [#[[$HEAD]], #{{.+}}], iterator_types = ["parallel"]} ins(%{{.+}} : tensor<2xf32>) outs(%{{.+}} : tensor<4xf32>)
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #[[$CH]], #{{.+}}], {{.*}} ins(%{{.+}}, %[[CONV]], %[[BETA]] : tensor<1x3x4xf32>, tensor<1x3x4xf32>, tensor<4xf32>)
// CHECK: arith.subf
// CHECK: arith.mulf
func.func @hybrid(%a: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>, %u: tensor<4x2xf32>, %g: tensor<2xf32>, %i: tensor<1x3x4xf32>) -> tensor<1x3x4xf32> {
  %o = hkt.hybrid ins(%a, %v, %u, %g : tensor<1x3x4xf32>, tensor<1x3x4xf32>, tensor<4x2xf32>, tensor<2xf32>) outs(%i : tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  return %o : tensor<1x3x4xf32>
}

// -----

// The whole layer must be decomposed first.
func.func @not_decomposed(%x: tensor<1x3x2xf32>, %wq: tensor<1x2x2xf32>, %wk: tensor<1x2x2xf32>, %wv: tensor<2x2xf32>, %wo: tensor<2x2xf32>, %theta: tensor<1x1xf32>) -> tensor<1x3x2xf32> {
  %init = tensor.empty() : tensor<1x3x2xf32>
  // expected-error @+1 {{must be decomposed before lowering to linalg (run hkt-decompose first)}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<1x3x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<1x1xf32>)
         outs(%init : tensor<1x3x2xf32>) {heads = 1 : i64, levels = 1 : i64} -> tensor<1x3x2xf32>
  return %y : tensor<1x3x2xf32>
}

// -----

// The model ops: token lengths as a min-reduction (T where no token is 0),
// the embedding as a gather from the table plus the first T positions,
// LayerNorm through its row statistics, GELU's tanh through exp, the masked
// mean-pool, and the cross-entropy through a row log-sum-exp.
// CHECK-LABEL: func.func @model_ops
// CHECK: %[[T:.+]] = arith.constant 8 : i32
// CHECK: linalg.fill ins(%[[T]] : i32)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<2x8xi32>) outs(%{{.*}} : tensor<2xi32>)
// CHECK: arith.cmpi eq
// CHECK: arith.minsi
// CHECK: tensor.extract_slice %{{.*}}[0, 0] [8, 4] [1, 1] : tensor<32x4xf32> to tensor<8x4xf32>
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<16x4xf32>
// CHECK: math.rsqrt
// CHECK: math.exp
// CHECK: arith.cmpi slt
// CHECK: arith.sitofp
// CHECK: arith.maximumf
// CHECK: math.log
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<2x4xf32>
// CHECK-NOT: hkt.
func.func @model_ops(%tok: tensor<2x8xi32>, %table: tensor<16x4xf32>, %pos: tensor<32x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %li = tensor.empty() : tensor<2xi32>
  %len = hkt.token_lengths ins(%tok : tensor<2x8xi32>) outs(%li : tensor<2xi32>) -> tensor<2xi32>
  %e = tensor.empty() : tensor<2x8x4xf32>
  %x = hkt.embed ins(%tok, %table, %pos : tensor<2x8xi32>, tensor<16x4xf32>, tensor<32x4xf32>) outs(%e : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %n = hkt.layer_norm ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %g = hkt.gelu ins(%n : tensor<2x8x4xf32>) outs(%e : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %pe = tensor.empty() : tensor<2x4xf32>
  %p = hkt.mean_pool ins(%g : tensor<2x8x4xf32>) lengths(%len : tensor<2xi32>) outs(%pe : tensor<2x4xf32>) -> tensor<2x4xf32>
  %le = tensor.empty() : tensor<f32>
  %l = hkt.cross_entropy ins(%p, %labels : tensor<2x4xf32>, tensor<2xi32>) outs(%le : tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The same ops on a row of dynamic length (hkt-compile --model's row
// functions): the token lengths start at T read with tensor.dim, the
// embedding takes the first T rows of pos, and every result is 1 x T.
// CHECK-LABEL: func.func @model_ops_dynamic
// CHECK-SAME: (%[[TOK:.+]]: tensor<1x?xi32>, %{{.+}}: tensor<16x4xf32>, %[[POS:[^:]+]]: tensor<32x4xf32>
// CHECK: tensor.empty() : tensor<1xi32>
// CHECK: %[[TD:.+]] = tensor.dim %[[TOK]], %{{.+}} : tensor<1x?xi32>
// CHECK-NEXT: %[[T:.+]] = arith.index_cast %[[TD]] : index to i32
// CHECK-NEXT: linalg.fill ins(%[[T]] : i32)
// CHECK: %[[N:.+]] = tensor.dim %[[TOK]], %{{.+}} : tensor<1x?xi32>
// CHECK-NEXT: tensor.extract_slice %[[POS]][0, 0] [%[[N]], 4] [1, 1] : tensor<32x4xf32> to tensor<?x4xf32>
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<1x?x4xf32>)
// CHECK-NOT: = hkt.
func.func @model_ops_dynamic(%tok: tensor<1x?xi32>, %table: tensor<16x4xf32>, %pos: tensor<32x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>, %labels: tensor<1xi32>) -> tensor<f32> {
  %c1 = arith.constant 1 : index
  %t = tensor.dim %tok, %c1 : tensor<1x?xi32>
  %li = tensor.empty() : tensor<1xi32>
  %len = hkt.token_lengths ins(%tok : tensor<1x?xi32>) outs(%li : tensor<1xi32>) -> tensor<1xi32>
  %e = tensor.empty(%t) : tensor<1x?x4xf32>
  %x = hkt.embed ins(%tok, %table, %pos : tensor<1x?xi32>, tensor<16x4xf32>, tensor<32x4xf32>) outs(%e : tensor<1x?x4xf32>) -> tensor<1x?x4xf32>
  %n = hkt.layer_norm ins(%x, %w, %b : tensor<1x?x4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<1x?x4xf32>) -> tensor<1x?x4xf32>
  %g = hkt.gelu ins(%n : tensor<1x?x4xf32>) outs(%e : tensor<1x?x4xf32>) -> tensor<1x?x4xf32>
  %pe = tensor.empty() : tensor<1x4xf32>
  %p = hkt.mean_pool ins(%g : tensor<1x?x4xf32>) lengths(%len : tensor<1xi32>) outs(%pe : tensor<1x4xf32>) -> tensor<1x4xf32>
  %le = tensor.empty() : tensor<f32>
  %l = hkt.cross_entropy ins(%p, %labels : tensor<1x4xf32>, tensor<1xi32>) outs(%le : tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
