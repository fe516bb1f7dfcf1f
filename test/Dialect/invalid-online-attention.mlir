// RUN: hkt-opt %s --split-input-file --verify-diagnostics
// Verifier diagnostics of hkt.online_attention, one per rule, then the ODS
// constraints. Valid shapes: B = 2, Tq = Tk = 8, D = 4, H = 2, factors 1, 2.

func.func @fewer_queries(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %k1: tensor<2x4x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{needs one query and one key per level factor, got 1 queries, 2 keys and 2 factors}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0, %k1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1, 2>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @fewer_keys(%q0: tensor<2x8x4xf32>, %q1: tensor<2x4x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{needs one query and one key per level factor, got 2 queries, 1 keys and 2 factors}}
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1, 2>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @more_factors(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{needs one query and one key per level factor, got 1 queries, 1 keys and 2 factors}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1, 2>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @no_factors(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{needs one query and one key per level factor, got 1 queries, 1 keys and 0 factors}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @level0_factor(%q0: tensor<2x4x4xf32>, %q1: tensor<2x2x4xf32>, %k0: tensor<2x4x4xf32>, %k1: tensor<2x2x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{factor of level 0 must be 1, got 2}}
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<2x4x4xf32>, tensor<2x2x4xf32>) keys(%k0, %k1 : tensor<2x4x4xf32>, tensor<2x2x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 2, 4>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @zero_factor(%q0: tensor<2x8x4xf32>, %q1: tensor<2x4x4xf32>, %k0: tensor<2x8x4xf32>, %k1: tensor<2x4x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{factors must be >= 1}}
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) keys(%k0, %k1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1, 0>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @negative_factor(%q0: tensor<2x8x4xf32>, %q1: tensor<2x4x4xf32>, %k0: tensor<2x8x4xf32>, %k1: tensor<2x4x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{factors must be >= 1}}
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) keys(%k0, %k1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1, -2>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @mixed_types(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf64>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{float operands must share one element type, got 'f32' and 'f64'}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf64>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @value_rank(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{value must be B x Tk x D (rank 3), got rank 2}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @acc_rank(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x2x8x2xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x2x8x2xf32> {
  // expected-error @+1 {{acc must be B x Tq x D (rank 3), got rank 4}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x2x8x2xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x2x8x2xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x2x8x2xf32>
}

// -----

func.func @max_rank(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{max must be B x H x Tq (rank 3), got rank 2}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @acc_width(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x6xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x6xf32> {
  // expected-error @+1 {{acc must have shape B x Tq x D = [2, 8, 4], got [2, 8, 6]}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x6xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x6xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x6xf32>
}

// -----

func.func @acc_batch(%q0: tensor<3x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<3x8x4xf32>, %m: tensor<3x2x8xf32>, %s: tensor<3x2x8xf32>) -> tensor<3x8x4xf32> {
  // expected-error @+1 {{acc must have shape B x Tq x D = [2, 8, 4], got [3, 8, 4]}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<3x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<3x8x4xf32>, tensor<3x2x8xf32>, tensor<3x2x8xf32>) {factors = array<i64: 1>} -> tensor<3x8x4xf32>, tensor<3x2x8xf32>, tensor<3x2x8xf32>
  return %acc : tensor<3x8x4xf32>
}

// -----

func.func @max_rows(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x7xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{max must have shape B x H x Tq = [2, 2, 8], got [2, 2, 7]}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x7xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x7xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @sum_heads(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x4x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{sum must have shape B x H x Tq = [2, 2, 8], got [2, 4, 8]}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x4x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x4x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @sum_rank(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x16xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{sum must have shape B x H x Tq = [2, 2, 8], got [2, 16]}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x16xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x16xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @heads_divide(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x3x8xf32>, %s: tensor<2x3x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{model width D = 4 is not divisible by the number of heads H = 3}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @query0_rows(%q0: tensor<2x7x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{query #0 must have shape B x ceil(Tq / factor) x D = [2, 8, 4], got [2, 7, 4]}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x7x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

// Level 1 of 7 queries has ceil(7 / 2) = 4 rows.
func.func @query1_rows(%q0: tensor<2x7x4xf32>, %q1: tensor<2x3x4xf32>, %k0: tensor<2x8x4xf32>, %k1: tensor<2x4x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x7x4xf32>, %m: tensor<2x2x7xf32>, %s: tensor<2x2x7xf32>) -> tensor<2x7x4xf32> {
  // expected-error @+1 {{query #1 must have shape B x ceil(Tq / factor) x D = [2, 4, 4], got [2, 3, 4]}}
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<2x7x4xf32>, tensor<2x3x4xf32>) keys(%k0, %k1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x7x4xf32>, tensor<2x2x7xf32>, tensor<2x2x7xf32>) {factors = array<i64: 1, 2>} -> tensor<2x7x4xf32>, tensor<2x2x7xf32>, tensor<2x2x7xf32>
  return %acc : tensor<2x7x4xf32>
}

// -----

func.func @key1_rows(%q0: tensor<2x8x4xf32>, %q1: tensor<2x4x4xf32>, %k0: tensor<2x8x4xf32>, %k1: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{key #1 must have shape B x ceil(Tk / factor) x D = [2, 4, 4], got [2, 8, 4]}}
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x4x4xf32>) keys(%k0, %k1 : tensor<2x8x4xf32>, tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1, 2>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @key0_width(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x2xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{key #0 must have shape B x ceil(Tk / factor) x D = [2, 8, 4], got [2, 8, 2]}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x2xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @causal_rectangular(%q0: tensor<2x8x4xf32>, %k0: tensor<2x6x4xf32>, %v: tensor<2x6x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{causal attention needs Tq = Tk, got 8 and 6}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x6x4xf32>) values(%v : tensor<2x6x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {causal = true, factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @lengths_shape(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %len: tensor<3xi32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{lengths must have shape B = [2], got [3]}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) lengths(%len : tensor<3xi32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

// ODS constraints.

func.func @missing_factors(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{requires attribute 'factors'}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @factors_not_dense_array(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{attribute 'factors' failed to satisfy constraint: i64 dense array attribute}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = [1]} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @float_lengths(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %len: tensor<2xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{operand #3 must be ranked tensor of signless integer values, but got 'tensor<2xf32>'}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) lengths(%len : tensor<2xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @integer_query(%q0: tensor<2x8x4xi32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{operand #0 must be variadic of ranked tensor of floating-point values, but got 'tensor<2x8x4xi32>'}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xi32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}

// -----

func.func @result_type(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x2x9xf32> {
  // expected-error @+1 {{expected type of operand #5 ('tensor<2x2x8xf32>') to match type of corresponding result ('tensor<2x2x9xf32>')}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x9xf32>
  return %sum : tensor<2x2x9xf32>
}

// -----

func.func @one_offset(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>, %i0: index) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{needs both offsets (query and key) or neither}}
  %r:3 = "hkt.online_attention"(%q0, %k0, %v, %i0, %a, %m, %s) <{factors = array<i64: 1>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 1, 1, 1>}> : (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, index, tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>)
  return %r#0 : tensor<2x8x4xf32>
}

// -----

func.func @factor_cap(%q0: tensor<2x8x4xf32>, %q1: tensor<2x1x4xf32>, %k0: tensor<2x8x4xf32>, %k1: tensor<2x1x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{factor = 9223372036854775807 exceeds 1024 (see docs/limits.md)}}
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<2x8x4xf32>, tensor<2x1x4xf32>) keys(%k0, %k1 : tensor<2x8x4xf32>, tensor<2x1x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = array<i64: 1, 9223372036854775807>} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}
