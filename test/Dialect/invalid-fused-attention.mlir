// RUN: hkt-opt %s --split-input-file --verify-diagnostics
// Verifier diagnostics of hkt.fused_attention and
// hkt.online_attention_backward, one per rule of their own (the level
// operands share hkt.online_attention's checks, tested there). Valid shapes:
// B = 2, T = 8, D = 4, H = 2, factors 1, 2.

func.func @weights_shape(%q0: tensor<2x8x4xf32>, %q1: tensor<2x4x4xf32>, %k0: tensor<2x8x4xf32>, %k1: tensor<2x4x4xf32>, %v: tensor<2x8x4xf32>, %w: tensor<2x3xf32>, %o: tensor<2x8x4xf32>, %l: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{weights must have shape H x L = [2, 2], got [2, 3]}}
  %y, %lse = hkt.fused_attention ins(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) keys(%k0, %k1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) values(%v : tensor<2x8x4xf32>) weights(%w : tensor<2x3xf32>) outs(%o, %l : tensor<2x8x4xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1, 2>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @lse_shape(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %w: tensor<2x1xf32>, %o: tensor<2x8x4xf32>, %l: tensor<2x2x7xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{lse must have shape B x H x Tq = [2, 2, 8], got [2, 2, 7]}}
  %y, %lse = hkt.fused_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) weights(%w : tensor<2x1xf32>) outs(%o, %l : tensor<2x8x4xf32>, tensor<2x2x7xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x7xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @fused_query_shape(%q0: tensor<2x8x4xf32>, %q1: tensor<2x5x4xf32>, %k0: tensor<2x8x4xf32>, %k1: tensor<2x4x4xf32>, %v: tensor<2x8x4xf32>, %w: tensor<2x2xf32>, %o: tensor<2x8x4xf32>, %l: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{query #1 must have shape B x ceil(Tq / factor) x D = [2, 4, 4], got [2, 5, 4]}}
  %y, %lse = hkt.fused_attention ins(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x5x4xf32>) keys(%k0, %k1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) values(%v : tensor<2x8x4xf32>) weights(%w : tensor<2x2xf32>) outs(%o, %l : tensor<2x8x4xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1, 2>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @fused_heads(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %w: tensor<3x1xf32>, %o: tensor<2x8x4xf32>, %l: tensor<2x3x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{model width D = 4 is not divisible by the number of heads H = 3}}
  %y, %lse = hkt.fused_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) weights(%w : tensor<3x1xf32>) outs(%o, %l : tensor<2x8x4xf32>, tensor<2x3x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x3x8xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @fused_causal_tq_tk(%q0: tensor<2x6x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %w: tensor<2x1xf32>, %o: tensor<2x6x4xf32>, %l: tensor<2x2x6xf32>) -> tensor<2x6x4xf32> {
  // expected-error @+1 {{causal attention needs Tq = Tk, got 6 and 8}}
  %y, %lse = hkt.fused_attention ins(%q0 : tensor<2x6x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) weights(%w : tensor<2x1xf32>) outs(%o, %l : tensor<2x6x4xf32>, tensor<2x2x6xf32>) {causal = true, factors = array<i64: 1>} -> tensor<2x6x4xf32>, tensor<2x2x6xf32>
  return %y : tensor<2x6x4xf32>
}

// -----

func.func @fused_lengths(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %w: tensor<2x1xf32>, %len: tensor<3xi32>, %o: tensor<2x8x4xf32>, %l: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{lengths must have shape B = [2], got [3]}}
  %y, %lse = hkt.fused_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) weights(%w : tensor<2x1xf32>) lengths(%len : tensor<3xi32>) outs(%o, %l : tensor<2x8x4xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @fused_element_types(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %w: tensor<2x1xf16>, %o: tensor<2x8x4xf32>, %l: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{float operands must share one element type, got 'f32' and 'f16'}}
  %y, %lse = hkt.fused_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) weights(%w : tensor<2x1xf16>) outs(%o, %l : tensor<2x8x4xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @backward_dout(%q: tensor<2x8x4xf32>, %dy: tensor<2x7x4xf32>, %s: tensor<2x2x7xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{query #0 must have shape B x ceil(Tq / factor) x D = [2, 7, 4], got [2, 8, 4]}}
  %g:3 = hkt.online_attention_backward ins(%q : tensor<2x8x4xf32>) keys(%q : tensor<2x8x4xf32>) values(%q : tensor<2x8x4xf32>) grads(%dy : tensor<2x7x4xf32>) stats(%s, %s : tensor<2x2x7xf32>, tensor<2x2x7xf32>) outs(%q : tensor<2x8x4xf32>) key_grads(%q : tensor<2x8x4xf32>) value_grad(%q : tensor<2x8x4xf32>) {factors = array<i64: 1>} -> (tensor<2x8x4xf32>), (tensor<2x8x4xf32>), tensor<2x8x4xf32>
  return %g#0 : tensor<2x8x4xf32>
}

// -----

func.func @backward_delta(%q: tensor<2x8x4xf32>, %s: tensor<2x2x8xf32>, %d: tensor<2x2x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{delta must have shape B x H x Tq = [2, 2, 8], got [2, 2, 4]}}
  %g:3 = hkt.online_attention_backward ins(%q : tensor<2x8x4xf32>) keys(%q : tensor<2x8x4xf32>) values(%q : tensor<2x8x4xf32>) grads(%q : tensor<2x8x4xf32>) stats(%s, %d : tensor<2x2x8xf32>, tensor<2x2x4xf32>) outs(%q : tensor<2x8x4xf32>) key_grads(%q : tensor<2x8x4xf32>) value_grad(%q : tensor<2x8x4xf32>) {factors = array<i64: 1>} -> (tensor<2x8x4xf32>), (tensor<2x8x4xf32>), tensor<2x8x4xf32>
  return %g#0 : tensor<2x8x4xf32>
}

// -----

func.func @backward_gradient_count(%q0: tensor<2x8x4xf32>, %q1: tensor<2x4x4xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{needs one query and one key gradient per level, got 1 and 2 for 2 levels}}
  %g:4 = hkt.online_attention_backward ins(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) keys(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) values(%q0 : tensor<2x8x4xf32>) grads(%q0 : tensor<2x8x4xf32>) stats(%s, %s : tensor<2x2x8xf32>, tensor<2x2x8xf32>) outs(%q0 : tensor<2x8x4xf32>) key_grads(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) value_grad(%q0 : tensor<2x8x4xf32>) {factors = array<i64: 1, 2>} -> (tensor<2x8x4xf32>), (tensor<2x8x4xf32>, tensor<2x4x4xf32>), tensor<2x8x4xf32>
  return %g#0 : tensor<2x8x4xf32>
}

// -----

func.func @backward_query_gradient_type(%q0: tensor<2x8x4xf32>, %q1: tensor<2x4x4xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{query gradient #1 must have the type 'tensor<2x4x4xf32>' of its query, got 'tensor<2x8x4xf32>'}}
  %g:5 = hkt.online_attention_backward ins(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) keys(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) values(%q0 : tensor<2x8x4xf32>) grads(%q0 : tensor<2x8x4xf32>) stats(%s, %s : tensor<2x2x8xf32>, tensor<2x2x8xf32>) outs(%q0, %q0 : tensor<2x8x4xf32>, tensor<2x8x4xf32>) key_grads(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) value_grad(%q0 : tensor<2x8x4xf32>) {factors = array<i64: 1, 2>} -> (tensor<2x8x4xf32>, tensor<2x8x4xf32>), (tensor<2x8x4xf32>, tensor<2x4x4xf32>), tensor<2x8x4xf32>
  return %g#0 : tensor<2x8x4xf32>
}

// -----

func.func @backward_key_gradient_type(%q0: tensor<2x8x4xf32>, %q1: tensor<2x4x4xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{key gradient #1 must have the type 'tensor<2x4x4xf32>' of its key, got 'tensor<2x8x4xf32>'}}
  %g:5 = hkt.online_attention_backward ins(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) keys(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) values(%q0 : tensor<2x8x4xf32>) grads(%q0 : tensor<2x8x4xf32>) stats(%s, %s : tensor<2x2x8xf32>, tensor<2x2x8xf32>) outs(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) key_grads(%q0, %q0 : tensor<2x8x4xf32>, tensor<2x8x4xf32>) value_grad(%q0 : tensor<2x8x4xf32>) {factors = array<i64: 1, 2>} -> (tensor<2x8x4xf32>, tensor<2x4x4xf32>), (tensor<2x8x4xf32>, tensor<2x8x4xf32>), tensor<2x8x4xf32>
  return %g#0 : tensor<2x8x4xf32>
}

// -----

func.func @backward_value_gradient_type(%q: tensor<2x8x4xf32>, %s: tensor<2x2x8xf32>, %bad: tensor<2x8x2xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{value gradient must have the type 'tensor<2x8x4xf32>' of the value, got 'tensor<2x8x2xf32>'}}
  %g:3 = hkt.online_attention_backward ins(%q : tensor<2x8x4xf32>) keys(%q : tensor<2x8x4xf32>) values(%q : tensor<2x8x4xf32>) grads(%q : tensor<2x8x4xf32>) stats(%s, %s : tensor<2x2x8xf32>, tensor<2x2x8xf32>) outs(%q : tensor<2x8x4xf32>) key_grads(%q : tensor<2x8x4xf32>) value_grad(%bad : tensor<2x8x2xf32>) {factors = array<i64: 1>} -> (tensor<2x8x4xf32>), (tensor<2x8x4xf32>), tensor<2x8x2xf32>
  return %g#0 : tensor<2x8x4xf32>
}

// -----

func.func @backward_one_offset(%q: tensor<2x8x4xf32>, %s: tensor<2x2x8xf32>, %i0: index) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{needs both offsets (query and key) or neither}}
  %g:3 = "hkt.online_attention_backward"(%q, %q, %q, %q, %s, %s, %i0, %q, %q, %q) <{factors = array<i64: 1>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>, index, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>)
  return %g#0 : tensor<2x8x4xf32>
}
