// RUN: hkt-opt %s --split-input-file --hkt-lower-to-linalg --verify-diagnostics
// What the reference lowering refuses, with the pass that handles it.

func.func @attention(%x: tensor<1x4x4xf32>, %wq: tensor<1x4x4xf32>, %wk: tensor<1x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x1xf32>) -> tensor<1x4x4xf32> {
  %init = tensor.empty() : tensor<1x4x4xf32>
  // expected-error @+1 {{must be decomposed before lowering to linalg (run hkt-decompose first)}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x1xf32>) outs(%init : tensor<1x4x4xf32>) {heads = 2 : i64, levels = 1 : i64} -> tensor<1x4x4xf32>
  return %y : tensor<1x4x4xf32>
}

// -----

func.func @fused(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %w: tensor<2x1xf32>, %o: tensor<2x8x4xf32>, %l: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'hkt.fused_attention' op is lowered by hkt-cpu-lower-online-attention (the fused pipeline), not by the reference lowering; a tile of one batch row and head is decomposed by hkt-decompose}}
  %y, %lse = hkt.fused_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) weights(%w : tensor<2x1xf32>) outs(%o, %l : tensor<2x8x4xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @backward(%q: tensor<2x8x4xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'hkt.online_attention_backward' op is lowered by hkt-cpu-lower-online-attention (the fused pipeline)}}
  %g:3 = hkt.online_attention_backward ins(%q : tensor<2x8x4xf32>) keys(%q : tensor<2x8x4xf32>) values(%q : tensor<2x8x4xf32>) grads(%q : tensor<2x8x4xf32>) stats(%s, %s : tensor<2x2x8xf32>, tensor<2x2x8xf32>) outs(%q : tensor<2x8x4xf32>) key_grads(%q : tensor<2x8x4xf32>) value_grad(%q : tensor<2x8x4xf32>) {factors = array<i64: 1>} -> (tensor<2x8x4xf32>), (tensor<2x8x4xf32>), tensor<2x8x4xf32>
  return %g#0 : tensor<2x8x4xf32>
}
