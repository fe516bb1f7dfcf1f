// RUN: hkt-opt %s --split-input-file --transform-interpreter --canonicalize | FileCheck %s

// hkt.online_attention through upstream tiling (its TilingInterface): the
// iteration domain is (b, h, i, j), parallel in b, h, i and a reduction in j.
// tile_using_forall over (batch, head, 32-row query tile), then
// tile_using_for over 16-key tiles carrying the running state; each tiled
// op reads the coarse rows of its tile (i0 / 2, 16 rows; j0 / 2, 8 keys) and
// carries its sequence positions in offsets(...) for the masks.
// CHECK-DAG: #[[$ROWS:.+]] = affine_map<(d0) -> (d0 * 32)>
// CHECK-DAG: #[[$COLS:.+]] = affine_map<()[s0] -> (s0 * 4)>
// CHECK-DAG: #[[$HALF:.+]] = affine_map<()[s0] -> (s0 floordiv 2)>
// CHECK-LABEL: func.func @tile_forall_for
// CHECK-SAME: (%[[Q0:[^:]+]]: tensor<2x64x8xf32>, %[[Q1:[^:]+]]: tensor<2x32x8xf32>, %[[K0:[^:]+]]: tensor<2x64x8xf32>, %[[K1:[^:]+]]: tensor<2x32x8xf32>, %[[V:[^:]+]]: tensor<2x64x8xf32>, %[[LEN:[^:]+]]: tensor<2xi32>, %[[A:[^:]+]]: tensor<2x64x8xf32>, %[[M:[^:]+]]: tensor<2x2x64xf32>, %[[S:[^:]+]]: tensor<2x2x64xf32>)
// CHECK: %[[R:.+]]:3 = scf.forall (%[[B:[^,]+]], %[[H:[^,]+]], %[[QT:[^)]+]]) in (2, 2, 2) shared_outs(%[[AO:[^ ]+]] = %[[A]], %[[MO:[^ ]+]] = %[[M]], %[[SO:[^ ]+]] = %[[S]])
// CHECK: %[[I0:.+]] = affine.apply #[[$ROWS]](%[[QT]])
// CHECK: %[[C0:.+]] = affine.apply #[[$COLS]]()[%[[H]]]
// CHECK: %[[QS0:.+]] = tensor.extract_slice %[[Q0]][%[[B]], %[[I0]], %[[C0]]] [1, 32, 4] [1, 1, 1] : tensor<2x64x8xf32> to tensor<1x32x4xf32>
// CHECK: %[[KS0:.+]] = tensor.extract_slice %[[K0]][%[[B]], 0, %[[C0]]] [1, 64, 4]
// CHECK: %[[QS1:.+]] = tensor.extract_slice %[[Q1]][%[[B]], %{{.+}}, %[[C0]]] [1, 16, 4] [1, 1, 1] : tensor<2x32x8xf32> to tensor<1x16x4xf32>
// CHECK: %[[AS:.+]] = tensor.extract_slice %[[AO]][%[[B]], %[[I0]], %[[C0]]] [1, 32, 4]
// CHECK: %[[MS:.+]] = tensor.extract_slice %[[MO]][%[[B]], %[[H]], %[[I0]]] [1, 1, 32]
// CHECK: %[[LS:.+]] = tensor.extract_slice %[[LEN]][%[[B]]] [1] [1] : tensor<2xi32> to tensor<1xi32>
// CHECK: %[[T:.+]]:3 = scf.for %[[J0:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[AI:[^ ]+]] = %[[AS]], %[[MI:[^ ]+]] = %[[MS]], %{{.+}} = %{{.+}}) -> (tensor<1x32x4xf32>, tensor<1x1x32xf32>, tensor<1x1x32xf32>)
// CHECK: %[[KT0:.+]] = tensor.extract_slice %[[KS0]][0, %[[J0]], 0] [1, 16, 4]
// CHECK: %[[J1:.+]] = affine.apply #[[$HALF]]()[%[[J0]]]
// CHECK: %[[KT1:.+]] = tensor.extract_slice %{{.+}}[0, %[[J1]], 0] [1, 8, 4]
// CHECK: hkt.online_attention ins(%[[QS0]], %[[QS1]] : tensor<1x32x4xf32>, tensor<1x16x4xf32>) keys(%[[KT0]], %[[KT1]] : tensor<1x16x4xf32>, tensor<1x8x4xf32>) values(%{{.+}} : tensor<1x16x4xf32>) lengths(%[[LS]] : tensor<1xi32>) offsets(%{{.+}}, %[[J0]]) outs(%[[AI]], %[[MI]], %{{.+}} : tensor<1x32x4xf32>, tensor<1x1x32xf32>, tensor<1x1x32xf32>) {causal = true, factors = array<i64: 1, 2>}
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[T]]#0 into %[[AO]][%[[B]], %[[I0]], %{{.+}}] [1, 32, 4]
// CHECK-NEXT: tensor.parallel_insert_slice %[[T]]#1 into %[[MO]][%[[B]], %[[H]], %[[I0]]] [1, 1, 32]
// CHECK-NEXT: tensor.parallel_insert_slice %[[T]]#2 into %[[SO]][%[[B]], %[[H]], %[[I0]]] [1, 1, 32]
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @tile_forall_for(%q0: tensor<2x64x8xf32>, %q1: tensor<2x32x8xf32>, %k0: tensor<2x64x8xf32>, %k1: tensor<2x32x8xf32>, %v: tensor<2x64x8xf32>, %len: tensor<2xi32>, %a: tensor<2x64x8xf32>, %m: tensor<2x2x64xf32>, %s: tensor<2x2x64xf32>) -> (tensor<2x64x8xf32>, tensor<2x2x64xf32>, tensor<2x2x64xf32>) {
  %r:3 = hkt.online_attention ins(%q0, %q1 : tensor<2x64x8xf32>, tensor<2x32x8xf32>) keys(%k0, %k1 : tensor<2x64x8xf32>, tensor<2x32x8xf32>) values(%v : tensor<2x64x8xf32>) lengths(%len : tensor<2xi32>) outs(%a, %m, %s : tensor<2x64x8xf32>, tensor<2x2x64xf32>, tensor<2x2x64xf32>) {causal = true, factors = array<i64: 1, 2>} -> tensor<2x64x8xf32>, tensor<2x2x64xf32>, tensor<2x2x64xf32>
  return %r#0, %r#1, %r#2 : tensor<2x64x8xf32>, tensor<2x2x64xf32>, tensor<2x2x64xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["hkt.online_attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %rows, %forall = transform.structured.tile_using_forall %op tile_sizes [1, 1, 32, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tile, %for = transform.structured.tile_using_for %rows tile_sizes [0, 0, 0, 16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// The tiles decomposed (hkt-decompose calls the op's decomposeOperation;
// upstream's decompose_interface wants one result per op, this one has
// three). Per tile: the level-1 block (16 x 8) once, added to the 2 x 2
// blocks of the level-0 scores; a tile with no visible key (past the key
// length, or above the diagonal) leaves the state alone; the masks only
// where the tile crosses the diagonal or the key length; then the online
// update and P V.
// CHECK-DAG: #[[$COARSE:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2)>
// CHECK-LABEL: func.func @tile_and_decompose
// CHECK: scf.forall
// CHECK: scf.for %[[J0:[^ ]+]] =
// CHECK: %[[KT0:.+]] = linalg.transpose ins(%{{.+}} : tensor<16x4xf32>) outs(%{{.+}} : tensor<4x16xf32>) permutation = [1, 0]
// CHECK: %[[KT1:.+]] = linalg.transpose ins(%{{.+}} : tensor<8x4xf32>) outs(%{{.+}} : tensor<4x8xf32>) permutation = [1, 0]
// CHECK: %[[LEN:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK: %[[END:.+]] = arith.addi %[[J0]], %[[C16:.+]] : index
// CHECK: %[[BEFORE:.+]] = arith.cmpi slt, %[[J0]], %[[LEN]] : index
// CHECK: %[[CUT:.+]] = arith.cmpi slt, %[[LEN]], %[[END]] : index
// CHECK: %[[QEND:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK: %[[BELOW:.+]] = arith.cmpi slt, %[[J0]], %[[QEND]] : index
// CHECK: %[[LIVE:.+]] = arith.andi %[[BEFORE]], %[[BELOW]] : i1
// CHECK: %[[DIAG:.+]] = arith.cmpi slt, %{{.+}}, %[[END]] : index
// CHECK: %[[MASKED:.+]] = arith.ori %[[CUT]], %[[DIAG]] : i1
// CHECK: %[[NEW:.+]]:3 = scf.if %[[LIVE]] -> (tensor<32x4xf32>, tensor<32xf32>, tensor<32xf32>) {
// CHECK: %[[S0:.+]] = linalg.matmul ins(%{{.+}}, %[[KT0]] : tensor<32x4xf32>, tensor<4x16xf32>) outs(%{{.+}} : tensor<32x16xf32>)
// CHECK: %[[S1:.+]] = linalg.matmul ins(%{{.+}}, %[[KT1]] : tensor<16x4xf32>, tensor<4x8xf32>) outs(%{{.+}} : tensor<16x8xf32>)
// CHECK: %[[BLOCKS:.+]] = tensor.expand_shape %[[S0]] {{\[\[}}0, 1], [2, 3]] output_shape [16, 2, 8, 2]
// CHECK: linalg.generic {indexing_maps = [#[[$COARSE]], #{{.+}}], {{.*}} ins(%[[S1]] : tensor<16x8xf32>) outs(%[[BLOCKS]] : tensor<16x2x8x2xf32>)
// CHECK: scf.if %[[MASKED]] -> (tensor<32x16xf32>) {
// CHECK: arith.select
// CHECK: } else {
// CHECK: math.exp
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<32x16xf32>, tensor<16x4xf32>) outs(%{{.+}} : tensor<32x4xf32>)
// CHECK: } else {
// CHECK-NEXT: scf.yield
// CHECK-NOT: hkt.online_attention
// CHECK: return
func.func @tile_and_decompose(%q0: tensor<2x64x8xf32>, %q1: tensor<2x32x8xf32>, %k0: tensor<2x64x8xf32>, %k1: tensor<2x32x8xf32>, %v: tensor<2x64x8xf32>, %len: tensor<2xi32>, %a: tensor<2x64x8xf32>, %m: tensor<2x2x64xf32>, %s: tensor<2x2x64xf32>) -> (tensor<2x64x8xf32>, tensor<2x2x64xf32>, tensor<2x2x64xf32>) {
  %r:3 = hkt.online_attention ins(%q0, %q1 : tensor<2x64x8xf32>, tensor<2x32x8xf32>) keys(%k0, %k1 : tensor<2x64x8xf32>, tensor<2x32x8xf32>) values(%v : tensor<2x64x8xf32>) lengths(%len : tensor<2xi32>) outs(%a, %m, %s : tensor<2x64x8xf32>, tensor<2x2x64xf32>, tensor<2x2x64xf32>) {causal = true, factors = array<i64: 1, 2>} -> tensor<2x64x8xf32>, tensor<2x2x64xf32>, tensor<2x2x64xf32>
  return %r#0, %r#1, %r#2 : tensor<2x64x8xf32>, tensor<2x2x64xf32>, tensor<2x2x64xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["hkt.online_attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %rows, %forall = transform.structured.tile_using_forall %op tile_sizes [1, 1, 32, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tile, %for = transform.structured.tile_using_for %rows tile_sizes [0, 0, 0, 16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_registered_pass "hkt-decompose" to %funcs : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// hkt.online_attention_backward through upstream tiling: the iteration
// domain is (b, h, i, j), parallel in b and h; i and j are both reductions
// (dK, dV sum over queries, dQ over keys), so they are tiled with scf.for:
// 16-key tiles outside carrying every gradient, 32-query tiles inside. A
// key tile's dK (both levels) and dV are carried whole by the query loop;
// the query tile's dQ slices are cut from and put back into the carried
// dQ; each tile op carries its sequence positions in offsets(...).
// CHECK-LABEL: func.func @tile_backward
// CHECK-SAME: (%[[Q0:[^:]+]]: tensor<2x64x8xf32>, %[[Q1:[^:]+]]: tensor<2x32x8xf32>, %[[K0:[^:]+]]: tensor<2x64x8xf32>, %[[K1:[^:]+]]: tensor<2x32x8xf32>, %[[V:[^:]+]]: tensor<2x64x8xf32>, %[[DY:[^:]+]]: tensor<2x64x8xf32>, %[[LSE:[^:]+]]: tensor<2x2x64xf32>, %[[DELTA:[^:]+]]: tensor<2x2x64xf32>, %[[LEN:[^:]+]]: tensor<2xi32>)
// CHECK: %[[R:.+]]:5 = scf.forall (%[[B:[^,]+]], %[[H:[^)]+]]) in (2, 2) shared_outs(%[[DQ0:[^ ]+]] = %[[Q0]], %[[DQ1:[^ ]+]] = %[[Q1]], %[[DK0:[^ ]+]] = %[[K0]], %[[DK1:[^ ]+]] = %[[K1]], %[[DV:[^ ]+]] = %[[V]])
// CHECK-DAG: tensor.extract_slice %[[LSE]][%[[B]], %[[H]], 0] [1, 1, 64]
// CHECK-DAG: tensor.extract_slice %[[DELTA]][%[[B]], %[[H]], 0] [1, 1, 64]
// CHECK: %[[KEYS:.+]]:5 = scf.for %[[J0:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.*}}) -> (tensor<1x64x4xf32>, tensor<1x32x4xf32>, tensor<1x64x4xf32>, tensor<1x32x4xf32>, tensor<1x64x4xf32>)
// CHECK: %[[QUERIES:.+]]:5 = scf.for %[[I0:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.*}}) -> (tensor<1x64x4xf32>, tensor<1x32x4xf32>, tensor<1x16x4xf32>, tensor<1x8x4xf32>, tensor<1x16x4xf32>)
// CHECK: %[[DQT:[^:]+]]:2, %[[DKT:[^:]+]]:2, %[[DVT:[^ ]+]] = hkt.online_attention_backward ins(%{{[^,]+}}, %{{[^ ]+}} : tensor<1x32x4xf32>, tensor<1x16x4xf32>) keys(%{{[^,]+}}, %{{[^ ]+}} : tensor<1x16x4xf32>, tensor<1x8x4xf32>) values(%{{[^ ]+}} : tensor<1x16x4xf32>) grads(%{{[^ ]+}} : tensor<1x32x4xf32>) stats(%{{[^,]+}}, %{{[^ ]+}} : tensor<1x1x32xf32>, tensor<1x1x32xf32>) lengths(%{{[^ ]+}} : tensor<1xi32>) offsets(%[[I0]], %[[J0]])
// CHECK-SAME: {causal = true, factors = array<i64: 1, 2>}
// CHECK: tensor.insert_slice %[[DQT]]#0 into %{{.+}}[0, %[[I0]], 0] [1, 32, 4]
// CHECK: tensor.insert_slice %[[DQT]]#1 into %{{.+}} [1, 16, 4]
// CHECK: scf.yield %{{.+}}, %{{.+}}, %[[DKT]]#0, %[[DKT]]#1, %[[DVT]]
// CHECK: tensor.insert_slice %[[QUERIES]]#2 into %{{.+}}[0, %[[J0]], 0] [1, 16, 4]
// CHECK: tensor.insert_slice %[[QUERIES]]#3 into %{{.+}} [1, 8, 4]
// CHECK: tensor.insert_slice %[[QUERIES]]#4 into %{{.+}}[0, %[[J0]], 0] [1, 16, 4]
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[KEYS]]#0 into %[[DQ0]][%[[B]], 0, %{{.+}}] [1, 64, 4]
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[R]]#3, %[[R]]#4
func.func @tile_backward(%q0: tensor<2x64x8xf32>, %q1: tensor<2x32x8xf32>, %k0: tensor<2x64x8xf32>, %k1: tensor<2x32x8xf32>, %v: tensor<2x64x8xf32>, %dy: tensor<2x64x8xf32>, %lse: tensor<2x2x64xf32>, %delta: tensor<2x2x64xf32>, %len: tensor<2xi32>) -> (tensor<2x64x8xf32>, tensor<2x32x8xf32>, tensor<2x64x8xf32>, tensor<2x32x8xf32>, tensor<2x64x8xf32>) {
  %g:5 = hkt.online_attention_backward ins(%q0, %q1 : tensor<2x64x8xf32>, tensor<2x32x8xf32>) keys(%k0, %k1 : tensor<2x64x8xf32>, tensor<2x32x8xf32>) values(%v : tensor<2x64x8xf32>) grads(%dy : tensor<2x64x8xf32>) stats(%lse, %delta : tensor<2x2x64xf32>, tensor<2x2x64xf32>) lengths(%len : tensor<2xi32>) outs(%q0, %q1 : tensor<2x64x8xf32>, tensor<2x32x8xf32>) key_grads(%k0, %k1 : tensor<2x64x8xf32>, tensor<2x32x8xf32>) value_grad(%v : tensor<2x64x8xf32>) {causal = true, factors = array<i64: 1, 2>} -> (tensor<2x64x8xf32>, tensor<2x32x8xf32>), (tensor<2x64x8xf32>, tensor<2x32x8xf32>), tensor<2x64x8xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4 : tensor<2x64x8xf32>, tensor<2x32x8xf32>, tensor<2x64x8xf32>, tensor<2x32x8xf32>, tensor<2x64x8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["hkt.online_attention_backward"]} in %root : (!transform.any_op) -> !transform.any_op
    %heads, %forall = transform.structured.tile_using_forall %op tile_sizes [1, 1, 0, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %keys, %for0 = transform.structured.tile_using_for %heads tile_sizes [0, 0, 0, 16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tile, %for1 = transform.structured.tile_using_for %keys tile_sizes [0, 0, 32, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
