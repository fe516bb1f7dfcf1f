// RUN: hkt-opt %s --split-input-file --verify-diagnostics
// Every verifier message of the model ops.

func.func @embed_width(%tok: tensor<2x8xi32>, %table: tensor<16x4xf32>, %pos: tensor<32x5xf32>, %i: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'hkt.embed' op pos must have shape P x D = [32, 4], got [32, 5]}}
  %x = hkt.embed ins(%tok, %table, %pos : tensor<2x8xi32>, tensor<16x4xf32>, tensor<32x5xf32>) outs(%i : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %x : tensor<2x8x4xf32>
}

// -----

func.func @embed_too_long(%tok: tensor<2x8xi32>, %table: tensor<16x4xf32>, %pos: tensor<6x4xf32>, %i: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'hkt.embed' op sequence length T = 8 exceeds the 6 positions of pos}}
  %x = hkt.embed ins(%tok, %table, %pos : tensor<2x8xi32>, tensor<16x4xf32>, tensor<6x4xf32>) outs(%i : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %x : tensor<2x8x4xf32>
}

// -----

func.func @embed_rank(%tok: tensor<16xi32>, %table: tensor<16x4xf32>, %pos: tensor<32x4xf32>, %i: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'hkt.embed' op tokens must be B x T (rank 2), got rank 1}}
  %x = hkt.embed ins(%tok, %table, %pos : tensor<16xi32>, tensor<16x4xf32>, tensor<32x4xf32>) outs(%i : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %x : tensor<2x8x4xf32>
}

// -----

func.func @embed_out(%tok: tensor<2x8xi32>, %table: tensor<16x4xf32>, %pos: tensor<32x4xf32>, %i: tensor<2x7x4xf32>) -> tensor<2x7x4xf32> {
  // expected-error @+1 {{'hkt.embed' op init must have shape B x T x D = [2, 8, 4], got [2, 7, 4]}}
  %x = hkt.embed ins(%tok, %table, %pos : tensor<2x8xi32>, tensor<16x4xf32>, tensor<32x4xf32>) outs(%i : tensor<2x7x4xf32>) -> tensor<2x7x4xf32>
  return %x : tensor<2x7x4xf32>
}

// -----

func.func @layer_norm_weight(%x: tensor<2x4xf32>, %w: tensor<3xf32>, %b: tensor<4xf32>, %i: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'hkt.layer_norm' op weight must have shape D = [4], got [3]}}
  %y = hkt.layer_norm ins(%x, %w, %b : tensor<2x4xf32>, tensor<3xf32>, tensor<4xf32>) outs(%i : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

func.func @layer_norm_eps(%x: tensor<2x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'hkt.layer_norm' op epsilon must be positive, got 0}}
  %y = hkt.layer_norm ins(%x, %w, %b : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%i : tensor<2x4xf32>) {epsilon = 0.0 : f64} -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

func.func @layer_norm_scalar(%x: tensor<f32>, %w: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'hkt.layer_norm' op input must have rank >= 1 (... x D)}}
  %y = hkt.layer_norm ins(%x, %w, %b : tensor<f32>, tensor<4xf32>, tensor<4xf32>) outs(%i : tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @gelu_shape(%x: tensor<2x4xf32>, %i: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'hkt.gelu' op init must have shape the input's shape = [2, 4], got [4, 2]}}
  %y = hkt.gelu ins(%x : tensor<2x4xf32>) outs(%i : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

func.func @gelu_type(%x: tensor<2x4xf32>, %i: tensor<2x4xf64>) -> tensor<2x4xf64> {
  // expected-error @+1 {{'hkt.gelu' op float operands must share one element type, got 'f32' and 'f64'}}
  %y = hkt.gelu ins(%x : tensor<2x4xf32>) outs(%i : tensor<2x4xf64>) -> tensor<2x4xf64>
  return %y : tensor<2x4xf64>
}

// -----

func.func @mean_pool_lengths(%x: tensor<2x8x4xf32>, %len: tensor<3xi32>, %i: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'hkt.mean_pool' op lengths must have shape B = [2], got [3]}}
  %p = hkt.mean_pool ins(%x : tensor<2x8x4xf32>) lengths(%len : tensor<3xi32>) outs(%i : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %p : tensor<2x4xf32>
}

// -----

func.func @mean_pool_out(%x: tensor<2x8x4xf32>, %len: tensor<2xi32>, %i: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'hkt.mean_pool' op init must have shape B x D = [2, 4], got [2, 8]}}
  %p = hkt.mean_pool ins(%x : tensor<2x8x4xf32>) lengths(%len : tensor<2xi32>) outs(%i : tensor<2x8xf32>) -> tensor<2x8xf32>
  return %p : tensor<2x8xf32>
}

// -----

func.func @cross_entropy_labels(%l: tensor<2x10xf32>, %y: tensor<3xi32>, %i: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'hkt.cross_entropy' op labels must have shape B = [2], got [3]}}
  %c = hkt.cross_entropy ins(%l, %y : tensor<2x10xf32>, tensor<3xi32>) outs(%i : tensor<f32>) -> tensor<f32>
  return %c : tensor<f32>
}

// -----

func.func @cross_entropy_out(%l: tensor<2x10xf32>, %y: tensor<2xi32>, %i: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'hkt.cross_entropy' op init must have shape a scalar = [], got [2]}}
  %c = hkt.cross_entropy ins(%l, %y : tensor<2x10xf32>, tensor<2xi32>) outs(%i : tensor<2xf32>) -> tensor<2xf32>
  return %c : tensor<2xf32>
}

// -----

func.func @cross_entropy_rank(%l: tensor<10xf32>, %y: tensor<2xi32>, %i: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'hkt.cross_entropy' op logits must be B x C (rank 2), got rank 1}}
  %c = hkt.cross_entropy ins(%l, %y : tensor<10xf32>, tensor<2xi32>) outs(%i : tensor<f32>) -> tensor<f32>
  return %c : tensor<f32>
}

// -----

func.func @token_lengths_out(%tok: tensor<2x8xi32>, %i: tensor<8xi32>) -> tensor<8xi32> {
  // expected-error @+1 {{'hkt.token_lengths' op init must have shape B = [2], got [8]}}
  %l = hkt.token_lengths ins(%tok : tensor<2x8xi32>) outs(%i : tensor<8xi32>) -> tensor<8xi32>
  return %l : tensor<8xi32>
}
