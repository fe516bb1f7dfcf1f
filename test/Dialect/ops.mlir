// RUN: hkt-opt %s --split-input-file | FileCheck %s
// Round trip through the generic form too.
// RUN: hkt-opt %s --split-input-file --mlir-print-op-generic | hkt-opt --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @downsample
// CHECK-SAME: (%[[X:.+]]: tensor<2x37x32xf32>, %[[W:.+]]: tensor<32x3xf32>, %[[B:.+]]: tensor<32xf32>, %[[I:.+]]: tensor<2x19x32xf32>)
// CHECK: hkt.downsample ins(%[[X]], %[[W]], %[[B]] : tensor<2x37x32xf32>, tensor<32x3xf32>, tensor<32xf32>) outs(%[[I]] : tensor<2x19x32xf32>) stride = 2 -> tensor<2x19x32xf32>
func.func @downsample(%x: tensor<2x37x32xf32>, %w: tensor<32x3xf32>, %b: tensor<32xf32>, %init: tensor<2x19x32xf32>) -> tensor<2x19x32xf32> {
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x37x32xf32>, tensor<32x3xf32>, tensor<32xf32>) outs(%init : tensor<2x19x32xf32>) stride = 2 -> tensor<2x19x32xf32>
  return %y : tensor<2x19x32xf32>
}

// -----

// CHECK-LABEL: func.func @downsample_stride3_dynamic
// CHECK: hkt.downsample {{.*}} stride = 3 -> tensor<1x?x8xf64>
func.func @downsample_stride3_dynamic(%x: tensor<1x?x8xf64>, %w: tensor<8x5xf64>, %b: tensor<8xf64>, %init: tensor<1x?x8xf64>) -> tensor<1x?x8xf64> {
  %y = hkt.downsample ins(%x, %w, %b : tensor<1x?x8xf64>, tensor<8x5xf64>, tensor<8xf64>) outs(%init : tensor<1x?x8xf64>) stride = 3 -> tensor<1x?x8xf64>
  return %y : tensor<1x?x8xf64>
}

// -----

// CHECK-LABEL: func.func @level_scores
// CHECK-SAME: (%[[Q:.+]]: tensor<2x19x32xf32>, %[[K:.+]]: tensor<2x19x32xf32>, %[[I:.+]]: tensor<2x4x19x19xf32>)
// CHECK: hkt.level_scores ins(%[[Q]], %[[K]] : tensor<2x19x32xf32>, tensor<2x19x32xf32>) outs(%[[I]] : tensor<2x4x19x19xf32>) -> tensor<2x4x19x19xf32>
func.func @level_scores(%q: tensor<2x19x32xf32>, %k: tensor<2x19x32xf32>, %init: tensor<2x4x19x19xf32>) -> tensor<2x4x19x19xf32> {
  %s = hkt.level_scores ins(%q, %k : tensor<2x19x32xf32>, tensor<2x19x32xf32>) outs(%init : tensor<2x4x19x19xf32>) -> tensor<2x4x19x19xf32>
  return %s : tensor<2x4x19x19xf32>
}

// -----

// CHECK-LABEL: func.func @upsample
// CHECK-SAME: (%[[S:.+]]: tensor<2x4x10x10xf32>, %[[I:.+]]: tensor<2x4x37x37xf32>)
// CHECK: hkt.upsample ins(%[[S]] : tensor<2x4x10x10xf32>) outs(%[[I]] : tensor<2x4x37x37xf32>) factor = 4 -> tensor<2x4x37x37xf32>
func.func @upsample(%s: tensor<2x4x10x10xf32>, %init: tensor<2x4x37x37xf32>) -> tensor<2x4x37x37xf32> {
  %u = hkt.upsample ins(%s : tensor<2x4x10x10xf32>) outs(%init : tensor<2x4x37x37xf32>) factor = 4 -> tensor<2x4x37x37xf32>
  return %u : tensor<2x4x37x37xf32>
}

// -----

// CHECK-LABEL: func.func @convex_fuse
// CHECK-SAME: (%[[S0:.+]]: tensor<2x4x37x37xf32>, %[[S1:.+]]: tensor<2x4x37x37xf32>, %[[T:.+]]: tensor<4x2xf32>, %[[I:.+]]: tensor<2x4x37x37xf32>)
// CHECK: hkt.convex_fuse ins(%[[S0]], %[[S1]] : tensor<2x4x37x37xf32>, tensor<2x4x37x37xf32>) theta(%[[T]] : tensor<4x2xf32>) outs(%[[I]] : tensor<2x4x37x37xf32>) -> tensor<2x4x37x37xf32>
func.func @convex_fuse(%s0: tensor<2x4x37x37xf32>, %s1: tensor<2x4x37x37xf32>, %theta: tensor<4x2xf32>, %init: tensor<2x4x37x37xf32>) -> tensor<2x4x37x37xf32> {
  %f = hkt.convex_fuse ins(%s0, %s1 : tensor<2x4x37x37xf32>, tensor<2x4x37x37xf32>) theta(%theta : tensor<4x2xf32>) outs(%init : tensor<2x4x37x37xf32>) -> tensor<2x4x37x37xf32>
  return %f : tensor<2x4x37x37xf32>
}

// -----

// CHECK-LABEL: func.func @mask
// CHECK: hkt.mask ins(%{{.+}} : tensor<2x4x37x37xf32>) lengths(%{{.+}} : tensor<2xi32>) outs(%{{.+}} : tensor<2x4x37x37xf32>) {causal = true} -> tensor<2x4x37x37xf32>
// CHECK: hkt.mask ins(%{{.+}} : tensor<2x4x37x37xf32>) outs(%{{.+}} : tensor<2x4x37x37xf32>) -> tensor<2x4x37x37xf32>
func.func @mask(%s: tensor<2x4x37x37xf32>, %len: tensor<2xi32>, %init: tensor<2x4x37x37xf32>) -> (tensor<2x4x37x37xf32>, tensor<2x4x37x37xf32>) {
  %m = hkt.mask ins(%s : tensor<2x4x37x37xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x4x37x37xf32>) {causal = true} -> tensor<2x4x37x37xf32>
  %n = hkt.mask ins(%s : tensor<2x4x37x37xf32>) outs(%init : tensor<2x4x37x37xf32>) -> tensor<2x4x37x37xf32>
  return %m, %n : tensor<2x4x37x37xf32>, tensor<2x4x37x37xf32>
}

// -----

// CHECK-LABEL: func.func @attend
// CHECK: hkt.attend ins(%{{.+}}, %{{.+}} : tensor<2x4x37x37xf32>, tensor<2x37x32xf32>) outs(%{{.+}} : tensor<2x37x32xf32>) -> tensor<2x37x32xf32>
func.func @attend(%p: tensor<2x4x37x37xf32>, %v: tensor<2x37x32xf32>, %init: tensor<2x37x32xf32>) -> tensor<2x37x32xf32> {
  %a = hkt.attend ins(%p, %v : tensor<2x4x37x37xf32>, tensor<2x37x32xf32>) outs(%init : tensor<2x37x32xf32>) -> tensor<2x37x32xf32>
  return %a : tensor<2x37x32xf32>
}

// -----

// CHECK-LABEL: func.func @hybrid
// CHECK: hkt.hybrid ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x37x32xf32>, tensor<2x37x32xf32>, tensor<32x3xf32>, tensor<4xf32>) outs(%{{.+}} : tensor<2x37x32xf32>) -> tensor<2x37x32xf32>
func.func @hybrid(%a: tensor<2x37x32xf32>, %v: tensor<2x37x32xf32>, %u: tensor<32x3xf32>, %g: tensor<4xf32>, %init: tensor<2x37x32xf32>) -> tensor<2x37x32xf32> {
  %o = hkt.hybrid ins(%a, %v, %u, %g : tensor<2x37x32xf32>, tensor<2x37x32xf32>, tensor<32x3xf32>, tensor<4xf32>) outs(%init : tensor<2x37x32xf32>) -> tensor<2x37x32xf32>
  return %o : tensor<2x37x32xf32>
}

// -----

// CHECK-LABEL: func.func @attention_full
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x64x32xf32>, %[[WQ:[^:]+]]: tensor<3x32x32xf32>, %[[WK:[^:]+]]: tensor<3x32x32xf32>, %[[WV:[^:]+]]: tensor<32x32xf32>, %[[WO:[^:]+]]: tensor<32x32xf32>, %[[TH:[^:]+]]: tensor<4x3xf32>, %[[DW:[^:]+]]: tensor<2x32x3xf32>, %[[DB:[^:]+]]: tensor<2x32xf32>, %[[U:[^:]+]]: tensor<32x3xf32>, %[[G:[^:]+]]: tensor<4xf32>, %[[L:[^:]+]]: tensor<2xi32>)
// CHECK: %[[I:.+]] = tensor.empty() : tensor<2x64x32xf32>
// CHECK: hkt.attention ins(%[[X]], %[[WQ]], %[[WK]], %[[WV]], %[[WO]], %[[TH]] : tensor<2x64x32xf32>, tensor<3x32x32xf32>, tensor<3x32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<4x3xf32>)
// CHECK-SAME: downsample(%[[DW]], %[[DB]] : tensor<2x32x3xf32>, tensor<2x32xf32>)
// CHECK-SAME: conv(%[[U]], %[[G]] : tensor<32x3xf32>, tensor<4xf32>)
// CHECK-SAME: lengths(%[[L]] : tensor<2xi32>)
// CHECK-SAME: outs(%[[I]] : tensor<2x64x32xf32>) {causal = true, heads = 4 : i64, hybrid = true, levels = 3 : i64} -> tensor<2x64x32xf32>
func.func @attention_full(%x: tensor<2x64x32xf32>, %wq: tensor<3x32x32xf32>, %wk: tensor<3x32x32xf32>, %wv: tensor<32x32xf32>, %wo: tensor<32x32xf32>, %theta: tensor<4x3xf32>, %dw: tensor<2x32x3xf32>, %db: tensor<2x32xf32>, %u: tensor<32x3xf32>, %g: tensor<4xf32>, %len: tensor<2xi32>) -> tensor<2x64x32xf32> {
  %init = tensor.empty() : tensor<2x64x32xf32>
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x64x32xf32>, tensor<3x32x32xf32>, tensor<3x32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<4x3xf32>)
         downsample(%dw, %db : tensor<2x32x3xf32>, tensor<2x32xf32>)
         conv(%u, %g : tensor<32x3xf32>, tensor<4xf32>)
         lengths(%len : tensor<2xi32>)
         outs(%init : tensor<2x64x32xf32>) {causal = true, heads = 4 : i64, hybrid = true, levels = 3 : i64} -> tensor<2x64x32xf32>
  return %y : tensor<2x64x32xf32>
}

// -----

// B and T dynamic (a module for every length up to its bounds): the sizes
// come from x at run time.
// CHECK-LABEL: func.func @attention_dynamic
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32> {hkt.bounds = array<i64: 4, 512, 32>, hkt.dims = ["B", "T", ""]}
// CHECK: hkt.attention ins(%[[X]], {{.*}} : tensor<?x?x32xf32>, {{.*}} -> tensor<?x?x32xf32>
func.func @attention_dynamic(%x: tensor<?x?x32xf32> {hkt.bounds = array<i64: 4, 512, 32>, hkt.dims = ["B", "T", ""]}, %wq: tensor<1x32x32xf32>, %wk: tensor<1x32x32xf32>, %wv: tensor<32x32xf32>, %wo: tensor<32x32xf32>, %theta: tensor<4x1xf32>, %len: tensor<?xi32> {hkt.bounds = array<i64: 4>, hkt.dims = ["B"]}, %init: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<?x?x32xf32>, tensor<1x32x32xf32>, tensor<1x32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<4x1xf32>)
         lengths(%len : tensor<?xi32>)
         outs(%init : tensor<?x?x32xf32>) {heads = 4 : i64, levels = 1 : i64} -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// Standard multi-head attention: one level, no hybrid branch, default attributes elided.
// CHECK-LABEL: func.func @attention_mha
// CHECK: hkt.attention ins(%{{.+}} : tensor<1x5x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x1xf32>) outs(%{{.+}} : tensor<1x5x4xf32>) {heads = 2 : i64, levels = 1 : i64} -> tensor<1x5x4xf32>
func.func @attention_mha(%x: tensor<1x5x4xf32>, %wq: tensor<1x4x4xf32>, %wk: tensor<1x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x1xf32>, %init: tensor<1x5x4xf32>) -> tensor<1x5x4xf32> {
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<1x5x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x1xf32>) outs(%init : tensor<1x5x4xf32>) {heads = 2 : i64, levels = 1 : i64, stride = 2 : i64, causal = false} -> tensor<1x5x4xf32>
  return %y : tensor<1x5x4xf32>
}

// -----

// One level: no lengths operand, causal = false elided (the default).
// CHECK-LABEL: func.func @online_attention_one_level
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x5x4xf32>, %[[K:[^:]+]]: tensor<1x7x4xf32>, %[[V:[^:]+]]: tensor<1x7x4xf32>, %[[A:[^:]+]]: tensor<1x5x4xf32>, %[[M:[^:]+]]: tensor<1x2x5xf32>, %[[S:[^:]+]]: tensor<1x2x5xf32>)
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %{{[^ ]+}} = hkt.online_attention ins(%[[Q]] : tensor<1x5x4xf32>) keys(%[[K]] : tensor<1x7x4xf32>) values(%[[V]] : tensor<1x7x4xf32>) outs(%[[A]], %[[M]], %[[S]] : tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>) {factors = array<i64: 1>} -> tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>
func.func @online_attention_one_level(%q: tensor<1x5x4xf32>, %k: tensor<1x7x4xf32>, %v: tensor<1x7x4xf32>, %a: tensor<1x5x4xf32>, %m: tensor<1x2x5xf32>, %s: tensor<1x2x5xf32>) -> (tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>) {
  %acc, %max, %sum = hkt.online_attention ins(%q : tensor<1x5x4xf32>) keys(%k : tensor<1x7x4xf32>) values(%v : tensor<1x7x4xf32>) outs(%a, %m, %s : tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>) {factors = array<i64: 1>, causal = false} -> tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>
  return %acc, %max, %sum : tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>
}

// -----

// Three levels (T = 37: 37, 19, 10 rows), key lengths, causal.
// CHECK-LABEL: func.func @online_attention_three_levels
// CHECK-SAME: (%[[Q0:[^:]+]]: tensor<2x37x32xf32>, %[[Q1:[^:]+]]: tensor<2x19x32xf32>, %[[Q2:[^:]+]]: tensor<2x10x32xf32>, %[[K0:[^:]+]]: tensor<2x37x32xf32>, %[[K1:[^:]+]]: tensor<2x19x32xf32>, %[[K2:[^:]+]]: tensor<2x10x32xf32>, %[[V:[^:]+]]: tensor<2x37x32xf32>, %[[L:[^:]+]]: tensor<2xi32>, %[[A:[^:]+]]: tensor<2x37x32xf32>, %[[M:[^:]+]]: tensor<2x4x37xf32>, %[[S:[^:]+]]: tensor<2x4x37xf32>)
// CHECK: %[[RA:[^,]+]], %[[RM:[^,]+]], %[[RS:[^ ]+]] = hkt.online_attention ins(%[[Q0]], %[[Q1]], %[[Q2]] : tensor<2x37x32xf32>, tensor<2x19x32xf32>, tensor<2x10x32xf32>)
// CHECK-SAME: keys(%[[K0]], %[[K1]], %[[K2]] : tensor<2x37x32xf32>, tensor<2x19x32xf32>, tensor<2x10x32xf32>)
// CHECK-SAME: values(%[[V]] : tensor<2x37x32xf32>)
// CHECK-SAME: lengths(%[[L]] : tensor<2xi32>)
// CHECK-SAME: outs(%[[A]], %[[M]], %[[S]] : tensor<2x37x32xf32>, tensor<2x4x37xf32>, tensor<2x4x37xf32>) {causal = true, factors = array<i64: 1, 2, 4>} -> tensor<2x37x32xf32>, tensor<2x4x37xf32>, tensor<2x4x37xf32>
// CHECK: return %[[RA]], %[[RM]], %[[RS]] :
func.func @online_attention_three_levels(%q0: tensor<2x37x32xf32>, %q1: tensor<2x19x32xf32>, %q2: tensor<2x10x32xf32>, %k0: tensor<2x37x32xf32>, %k1: tensor<2x19x32xf32>, %k2: tensor<2x10x32xf32>, %v: tensor<2x37x32xf32>, %len: tensor<2xi32>, %a: tensor<2x37x32xf32>, %m: tensor<2x4x37xf32>, %s: tensor<2x4x37xf32>) -> (tensor<2x37x32xf32>, tensor<2x4x37xf32>, tensor<2x4x37xf32>) {
  %acc, %max, %sum = hkt.online_attention
      ins(%q0, %q1, %q2 : tensor<2x37x32xf32>, tensor<2x19x32xf32>, tensor<2x10x32xf32>)
      keys(%k0, %k1, %k2 : tensor<2x37x32xf32>, tensor<2x19x32xf32>, tensor<2x10x32xf32>)
      values(%v : tensor<2x37x32xf32>)
      lengths(%len : tensor<2xi32>)
      outs(%a, %m, %s : tensor<2x37x32xf32>, tensor<2x4x37xf32>, tensor<2x4x37xf32>)
      {causal = true, factors = array<i64: 1, 2, 4>}
      -> tensor<2x37x32xf32>, tensor<2x4x37xf32>, tensor<2x4x37xf32>
  return %acc, %max, %sum : tensor<2x37x32xf32>, tensor<2x4x37xf32>, tensor<2x4x37xf32>
}

// -----

// A tile of a causal op: offsets place it in the sequence, so Tq != Tk is
// fine.
// CHECK-LABEL: func.func @online_attention_tile
// CHECK-SAME: %[[I0:[^:]+]]: index, %[[J0:[^:]+]]: index
// CHECK: hkt.online_attention ins(%{{.+}} : tensor<1x4x4xf32>) keys(%{{.+}} : tensor<1x8x4xf32>) values(%{{.+}} : tensor<1x8x4xf32>) offsets(%[[I0]], %[[J0]]) outs({{.*}}) {causal = true, factors = array<i64: 1>}
func.func @online_attention_tile(%q: tensor<1x4x4xf32>, %k: tensor<1x8x4xf32>, %v: tensor<1x8x4xf32>, %a: tensor<1x4x4xf32>, %m: tensor<1x1x4xf32>, %s: tensor<1x1x4xf32>, %i0: index, %j0: index) -> tensor<1x4x4xf32> {
  %acc, %max, %sum = hkt.online_attention ins(%q : tensor<1x4x4xf32>) keys(%k : tensor<1x8x4xf32>) values(%v : tensor<1x8x4xf32>) offsets(%i0, %j0) outs(%a, %m, %s : tensor<1x4x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>) {causal = true, factors = array<i64: 1>} -> tensor<1x4x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
  return %acc : tensor<1x4x4xf32>
}

// -----

// The model ops (SPEC "The classifier model").
// CHECK-LABEL: func.func @model_ops
// CHECK: %[[LEN:.+]] = hkt.token_lengths ins(%{{.*}} : tensor<2x8xi32>) outs(%{{.*}} : tensor<2xi32>) -> tensor<2xi32>
// CHECK: %[[X:.+]] = hkt.embed ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8xi32>, tensor<16x4xf32>, tensor<32x4xf32>) outs(%{{.*}} : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
// CHECK: %[[N:.+]] = hkt.layer_norm ins(%[[X]], %{{.*}}, %{{.*}} : tensor<2x8x4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%{{.*}} : tensor<2x8x4xf32>) {epsilon = 1.000000e-03 : f64} -> tensor<2x8x4xf32>
// CHECK: %[[G:.+]] = hkt.gelu ins(%[[N]] : tensor<2x8x4xf32>) outs(%{{.*}} : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
// CHECK: %[[P:.+]] = hkt.mean_pool ins(%[[G]] : tensor<2x8x4xf32>) lengths(%[[LEN]] : tensor<2xi32>) outs(%{{.*}} : tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: hkt.cross_entropy ins(%[[P]], %{{.*}} : tensor<2x4xf32>, tensor<2xi32>) outs(%{{.*}} : tensor<f32>) -> tensor<f32>
func.func @model_ops(%tok: tensor<2x8xi32>, %table: tensor<16x4xf32>, %pos: tensor<32x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %li = tensor.empty() : tensor<2xi32>
  %len = hkt.token_lengths ins(%tok : tensor<2x8xi32>) outs(%li : tensor<2xi32>) -> tensor<2xi32>
  %e = tensor.empty() : tensor<2x8x4xf32>
  %x = hkt.embed ins(%tok, %table, %pos : tensor<2x8xi32>, tensor<16x4xf32>, tensor<32x4xf32>) outs(%e : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %n = hkt.layer_norm ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<2x8x4xf32>) {epsilon = 1.0e-3 : f64} -> tensor<2x8x4xf32>
  %g = hkt.gelu ins(%n : tensor<2x8x4xf32>) outs(%e : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %pe = tensor.empty() : tensor<2x4xf32>
  %p = hkt.mean_pool ins(%g : tensor<2x8x4xf32>) lengths(%len : tensor<2xi32>) outs(%pe : tensor<2x4xf32>) -> tensor<2x4xf32>
  %le = tensor.empty() : tensor<f32>
  %l = hkt.cross_entropy ins(%p, %labels : tensor<2x4xf32>, tensor<2xi32>) outs(%le : tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @fused_attention
// CHECK: %{{[^,]+}}, %{{[^ ]+}} = hkt.fused_attention ins(%{{[^,]+}}, %{{[^ ]+}} : tensor<1x8x4xf32>, tensor<1x4x4xf32>) keys(%{{[^,]+}}, %{{[^ ]+}} : tensor<1x8x4xf32>, tensor<1x4x4xf32>) values(%{{[^ ]+}} : tensor<1x8x4xf32>) weights(%{{[^ ]+}} : tensor<2x2xf32>) lengths(%{{[^ ]+}} : tensor<1xi32>) outs(%{{[^,]+}}, %{{[^ ]+}} : tensor<1x8x4xf32>, tensor<1x2x8xf32>) {causal = true, factors = array<i64: 1, 2>} -> tensor<1x8x4xf32>, tensor<1x2x8xf32>
func.func @fused_attention(%q0: tensor<1x8x4xf32>, %q1: tensor<1x4x4xf32>, %k0: tensor<1x8x4xf32>, %k1: tensor<1x4x4xf32>, %v: tensor<1x8x4xf32>, %w: tensor<2x2xf32>, %len: tensor<1xi32>, %o: tensor<1x8x4xf32>, %l: tensor<1x2x8xf32>) -> (tensor<1x8x4xf32>, tensor<1x2x8xf32>) {
  %y, %lse = hkt.fused_attention ins(%q0, %q1 : tensor<1x8x4xf32>, tensor<1x4x4xf32>) keys(%k0, %k1 : tensor<1x8x4xf32>, tensor<1x4x4xf32>) values(%v : tensor<1x8x4xf32>) weights(%w : tensor<2x2xf32>) lengths(%len : tensor<1xi32>) outs(%o, %l : tensor<1x8x4xf32>, tensor<1x2x8xf32>) {causal = true, factors = array<i64: 1, 2>} -> tensor<1x8x4xf32>, tensor<1x2x8xf32>
  return %y, %lse : tensor<1x8x4xf32>, tensor<1x2x8xf32>
}

// -----

// CHECK-LABEL: func.func @online_attention_backward
// CHECK: %{{.+}} = hkt.online_attention_backward ins(%{{[^,]+}}, %{{[^ ]+}} : tensor<1x8x4xf32>, tensor<1x4x4xf32>) keys(%{{[^,]+}}, %{{[^ ]+}} : tensor<1x8x4xf32>, tensor<1x4x4xf32>) values(%{{[^ ]+}} : tensor<1x8x4xf32>) grads(%{{[^ ]+}} : tensor<1x8x4xf32>) stats(%{{[^,]+}}, %{{[^ ]+}} : tensor<1x2x8xf32>, tensor<1x2x8xf32>) lengths(%{{[^ ]+}} : tensor<1xi32>) outs(%{{[^,]+}}, %{{[^ ]+}} : tensor<1x8x4xf32>, tensor<1x4x4xf32>) key_grads(%{{[^,]+}}, %{{[^ ]+}} : tensor<1x8x4xf32>, tensor<1x4x4xf32>) value_grad(%{{[^ ]+}} : tensor<1x8x4xf32>) {causal = true, factors = array<i64: 1, 2>} -> (tensor<1x8x4xf32>, tensor<1x4x4xf32>), (tensor<1x8x4xf32>, tensor<1x4x4xf32>), tensor<1x8x4xf32>
// CHECK: hkt.online_attention_backward {{.*}} offsets(%{{[^,]+}}, %{{[^ ]+}}) outs({{.*}} {causal = true, factors = array<i64: 1>} -> (tensor<1x4x4xf32>), (tensor<1x4x4xf32>), tensor<1x4x4xf32>
func.func @online_attention_backward(%q0: tensor<1x8x4xf32>, %q1: tensor<1x4x4xf32>, %k0: tensor<1x8x4xf32>, %k1: tensor<1x4x4xf32>, %v: tensor<1x8x4xf32>, %dy: tensor<1x8x4xf32>, %lse: tensor<1x2x8xf32>, %delta: tensor<1x2x8xf32>, %len: tensor<1xi32>, %i0: index, %j0: index, %t: tensor<1x4x4xf32>, %r: tensor<1x2x4xf32>) -> (tensor<1x8x4xf32>, tensor<1x4x4xf32>, tensor<1x8x4xf32>, tensor<1x4x4xf32>, tensor<1x8x4xf32>, tensor<1x4x4xf32>) {
  %g:5 = hkt.online_attention_backward ins(%q0, %q1 : tensor<1x8x4xf32>, tensor<1x4x4xf32>) keys(%k0, %k1 : tensor<1x8x4xf32>, tensor<1x4x4xf32>) values(%v : tensor<1x8x4xf32>) grads(%dy : tensor<1x8x4xf32>) stats(%lse, %delta : tensor<1x2x8xf32>, tensor<1x2x8xf32>) lengths(%len : tensor<1xi32>) outs(%q0, %q1 : tensor<1x8x4xf32>, tensor<1x4x4xf32>) key_grads(%k0, %k1 : tensor<1x8x4xf32>, tensor<1x4x4xf32>) value_grad(%v : tensor<1x8x4xf32>) {causal = true, factors = array<i64: 1, 2>} -> (tensor<1x8x4xf32>, tensor<1x4x4xf32>), (tensor<1x8x4xf32>, tensor<1x4x4xf32>), tensor<1x8x4xf32>
  // A tile: any shapes, with its sequence positions.
  %h:3 = hkt.online_attention_backward ins(%t : tensor<1x4x4xf32>) keys(%t : tensor<1x4x4xf32>) values(%t : tensor<1x4x4xf32>) grads(%t : tensor<1x4x4xf32>) stats(%r, %r : tensor<1x2x4xf32>, tensor<1x2x4xf32>) offsets(%i0, %j0) outs(%t : tensor<1x4x4xf32>) key_grads(%t : tensor<1x4x4xf32>) value_grad(%t : tensor<1x4x4xf32>) {causal = true, factors = array<i64: 1>} -> (tensor<1x4x4xf32>), (tensor<1x4x4xf32>), tensor<1x4x4xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %h#2 : tensor<1x8x4xf32>, tensor<1x4x4xf32>, tensor<1x8x4xf32>, tensor<1x4x4xf32>, tensor<1x8x4xf32>, tensor<1x4x4xf32>
}
