// RUN: hkt-opt %s --split-input-file --verify-diagnostics
// Verifier diagnostics of hkt.attention, one per rule.

func.func @mixed_types(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf64>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{float operands must share one element type, got 'f32' and 'f64'}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf64>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @x_rank(%x: tensor<8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{x must be B x T x D (rank 3), got rank 2}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @heads_divide(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{model width D = 4 is not divisible by the number of heads H = 3}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 3 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @wq_shape(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x2xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{wq must have shape L x D x D = [3, 4, 4], got [3, 4, 2]}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x2xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @wk_levels(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<2x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{wk must have shape L x D x D = [3, 4, 4], got [2, 4, 4]}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<2x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @wv_shape(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x2xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{wv must have shape D x D = [4, 4], got [4, 2]}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x2xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @wo_shape(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<3x4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{wo must have shape D x D = [4, 4], got [3, 4, 4]}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<3x4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @theta_shape(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x2xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{theta must have shape H x L = [2, 3], got [2, 2]}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x2xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @init_shape(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x7x4xf32>) -> tensor<2x7x4xf32> {
  // expected-error @+1 {{init must have shape B x T x D = [2, 8, 4], got [2, 7, 4]}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x7x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x7x4xf32>
  return %y : tensor<2x7x4xf32>
}

// -----

func.func @down_kernel(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x5xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{down_w must have shape (L-1) x D x kernel = [2, 4, 3], got [2, 4, 5]}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x5xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @down_bias(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<1x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{down_b must have shape (L-1) x D = [2, 4], got [1, 4]}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<1x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @conv_kernel(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{conv_u must have shape D x conv_kernel = [4, 4], got [4, 3]}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true, conv_kernel = 4 : i64} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @gamma_shape(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<4xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{gamma must have shape H = [2], got [4]}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<4xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @lengths_shape(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<3xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{lengths must have shape B = [2], got [3]}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<3xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @levels_zero(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{attribute 'levels' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 0 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @heads_zero(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{attribute 'heads' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 0 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @stride_zero(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{attribute 'stride' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true, stride = 0 : i64} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @kernel_zero(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{attribute 'kernel' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true, kernel = 0 : i64} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @levels_need_downsample(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{levels = 3 needs downsample(down_w, down_b) operands}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @one_level_no_downsample(%x: tensor<2x8x4xf32>, %wq: tensor<1x4x4xf32>, %wk: tensor<1x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x1xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{levels = 1 takes no downsample operands}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x1xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 1 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @hybrid_needs_conv(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{hybrid = true needs conv(conv_u, gamma) operands}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @conv_needs_hybrid(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{conv(conv_u, gamma) operands need hybrid = true}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @levels_cap(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{levels = 40 exceeds 16 (see docs/limits.md)}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 40 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @stride_cap(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{stride = 1025 exceeds 1024 (see docs/limits.md)}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, stride = 1025 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @coarsest_block(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{stride^(levels-1) = 33^2 exceeds 1024 (see docs/limits.md)}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, stride = 33 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @stride_beyond_int32(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{stride = 4294967296 exceeds 1024 (see docs/limits.md)}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, stride = 4294967296 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @kernel_cap(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{kernel = 1025 exceeds 1024 (see docs/limits.md)}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, kernel = 1025 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

func.func @conv_kernel_cap(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{conv_kernel = 1025 exceeds 1024 (see docs/limits.md)}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, conv_kernel = 1025 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

// B and T may be dynamic (ops.mlir); the model width may not: the heads
// split it.
func.func @dynamic_width(%x: tensor<2x?x?xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x?x?xf32>) -> tensor<2x?x?xf32> {
  // expected-error @+1 {{the model width D of x must be static (only B and T may be dynamic), got 'tensor<2x?x?xf32>'}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x?x?xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x?x?xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x?x?xf32>
  return %y : tensor<2x?x?xf32>
}

// -----

func.func @dynamic_weight(%x: tensor<2x?x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<?x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x?x4xf32>) -> tensor<2x?x4xf32> {
  // expected-error @+1 {{weight conv_u must have a static shape (only B and T of x may be dynamic), got 'tensor<?x3xf32>'}}
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x?x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<?x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x?x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x?x4xf32>
  return %y : tensor<2x?x4xf32>
}
