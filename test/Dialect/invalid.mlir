// RUN: hkt-opt %s --split-input-file --verify-diagnostics

func.func @downsample_mixed_types(%x: tensor<2x8x4xf32>, %w: tensor<4x3xf64>, %b: tensor<4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{float operands must share one element type, got 'f32' and 'f64'}}
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<4x3xf64>, tensor<4xf32>) outs(%i : tensor<2x4x4xf32>) stride = 2 -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}

// -----

func.func @downsample_input_rank(%x: tensor<8x4xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{input must be B x T x D (rank 3), got rank 2}}
  %y = hkt.downsample ins(%x, %w, %b : tensor<8x4xf32>, tensor<4x3xf32>, tensor<4xf32>) outs(%i : tensor<2x4x4xf32>) stride = 2 -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}

// -----

func.func @downsample_weight_rank(%x: tensor<2x8x4xf32>, %w: tensor<4x3x1xf32>, %b: tensor<4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{weight must be D x k (rank 2), got rank 3}}
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<4x3x1xf32>, tensor<4xf32>) outs(%i : tensor<2x4x4xf32>) stride = 2 -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}

// -----

func.func @downsample_weight_width(%x: tensor<2x8x4xf32>, %w: tensor<5x3xf32>, %b: tensor<4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{weight must have shape D x k = [4, 3], got [5, 3]}}
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<5x3xf32>, tensor<4xf32>) outs(%i : tensor<2x4x4xf32>) stride = 2 -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}

// -----

func.func @downsample_bias(%x: tensor<2x8x4xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{bias must have shape D = [4], got [3]}}
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<4x3xf32>, tensor<3xf32>) outs(%i : tensor<2x4x4xf32>) stride = 2 -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}

// -----

func.func @downsample_length(%x: tensor<2x9x4xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{init must have shape B x ceil(T / stride) x D = [2, 5, 4], got [2, 4, 4]}}
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x9x4xf32>, tensor<4x3xf32>, tensor<4xf32>) outs(%i : tensor<2x4x4xf32>) stride = 2 -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}

// -----

func.func @downsample_stride_zero(%x: tensor<2x8x4xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{attribute 'stride' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<4x3xf32>, tensor<4xf32>) outs(%i : tensor<2x4x4xf32>) stride = 0 -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}

// -----

func.func @downsample_result_type(%x: tensor<2x8x4xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x5x4xf32> {
  // expected-error @+1 {{expected type of operand #3 ('tensor<2x4x4xf32>') to match type of corresponding result ('tensor<2x5x4xf32>')}}
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<4x3xf32>, tensor<4xf32>) outs(%i : tensor<2x4x4xf32>) stride = 2 -> tensor<2x5x4xf32>
  return %y : tensor<2x5x4xf32>
}

// -----

func.func @scores_query_rank(%q: tensor<8x4xf32>, %k: tensor<2x8x4xf32>, %i: tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32> {
  // expected-error @+1 {{query must be B x Tq x D (rank 3), got rank 2}}
  %s = hkt.level_scores ins(%q, %k : tensor<8x4xf32>, tensor<2x8x4xf32>) outs(%i : tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  return %s : tensor<2x2x8x8xf32>
}

// -----

func.func @scores_init_rank(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %i: tensor<2x8x8xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{init must be B x H x Tq x Tk (rank 4), got rank 3}}
  %s = hkt.level_scores ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%i : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %s : tensor<2x8x8xf32>
}

// -----

func.func @scores_key_width(%q: tensor<2x8x4xf32>, %k: tensor<2x8x6xf32>, %i: tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32> {
  // expected-error @+1 {{key must have shape B x Tk x D = [2, 8, 4], got [2, 8, 6]}}
  %s = hkt.level_scores ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x6xf32>) outs(%i : tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  return %s : tensor<2x2x8x8xf32>
}

// -----

func.func @scores_init_shape(%q: tensor<2x8x4xf32>, %k: tensor<2x6x4xf32>, %i: tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32> {
  // expected-error @+1 {{init must have shape B x H x Tq x Tk = [2, 2, 8, 6], got [2, 2, 8, 8]}}
  %s = hkt.level_scores ins(%q, %k : tensor<2x8x4xf32>, tensor<2x6x4xf32>) outs(%i : tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  return %s : tensor<2x2x8x8xf32>
}

// -----

func.func @scores_heads(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %i: tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32> {
  // expected-error @+1 {{model width D = 4 is not divisible by the number of heads H = 3}}
  %s = hkt.level_scores ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%i : tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  return %s : tensor<2x3x8x8xf32>
}

// -----

func.func @upsample_input_rank(%s: tensor<2x4x4xf32>, %i: tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32> {
  // expected-error @+1 {{input must be B x H x Tq' x Tk' (rank 4), got rank 3}}
  %u = hkt.upsample ins(%s : tensor<2x4x4xf32>) outs(%i : tensor<2x2x8x8xf32>) factor = 2 -> tensor<2x2x8x8xf32>
  return %u : tensor<2x2x8x8xf32>
}

// -----

func.func @upsample_init_rank(%s: tensor<2x2x4x4xf32>, %i: tensor<2x8x8xf32>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{init must be B x H x Tq x Tk (rank 4), got rank 3}}
  %u = hkt.upsample ins(%s : tensor<2x2x4x4xf32>) outs(%i : tensor<2x8x8xf32>) factor = 2 -> tensor<2x8x8xf32>
  return %u : tensor<2x8x8xf32>
}

// -----

func.func @upsample_heads(%s: tensor<2x2x4x4xf32>, %i: tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32> {
  // expected-error @+1 {{init must have shape B x H x Tq x Tk = [2, 2, 8, 8], got [2, 3, 8, 8]}}
  %u = hkt.upsample ins(%s : tensor<2x2x4x4xf32>) outs(%i : tensor<2x3x8x8xf32>) factor = 2 -> tensor<2x3x8x8xf32>
  return %u : tensor<2x3x8x8xf32>
}

// -----

func.func @upsample_factor(%s: tensor<2x2x4x4xf32>, %i: tensor<2x2x9x8xf32>) -> tensor<2x2x9x8xf32> {
  // expected-error @+1 {{input dimension 2 must be ceil(9 / 2) = 5, got 4}}
  %u = hkt.upsample ins(%s : tensor<2x2x4x4xf32>) outs(%i : tensor<2x2x9x8xf32>) factor = 2 -> tensor<2x2x9x8xf32>
  return %u : tensor<2x2x9x8xf32>
}

// -----

func.func @upsample_factor_zero(%s: tensor<2x2x4x4xf32>, %i: tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32> {
  // expected-error @+1 {{attribute 'factor' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %u = hkt.upsample ins(%s : tensor<2x2x4x4xf32>) outs(%i : tensor<2x2x8x8xf32>) factor = 0 -> tensor<2x2x8x8xf32>
  return %u : tensor<2x2x8x8xf32>
}

// -----

func.func @fuse_no_scores(%theta: tensor<2x1xf32>, %i: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{needs at least one score operand}}
  %f = "hkt.convex_fuse"(%theta, %i) : (tensor<2x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %f : tensor<1x2x4x4xf32>
}

// -----

func.func @fuse_init_rank(%s: tensor<1x2x4x4xf32>, %theta: tensor<2x1xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{init must be B x H x Tq x Tk (rank 4), got rank 3}}
  %f = hkt.convex_fuse ins(%s : tensor<1x2x4x4xf32>) theta(%theta : tensor<2x1xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %f : tensor<2x4x4xf32>
}

// -----

func.func @fuse_score_shape(%s0: tensor<1x2x4x4xf32>, %s1: tensor<1x2x2x2xf32>, %theta: tensor<2x2xf32>, %i: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{score operand #1 must have shape B x H x Tq x Tk = [1, 2, 4, 4], got [1, 2, 2, 2]}}
  %f = hkt.convex_fuse ins(%s0, %s1 : tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>) theta(%theta : tensor<2x2xf32>) outs(%i : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %f : tensor<1x2x4x4xf32>
}

// -----

func.func @fuse_theta(%s0: tensor<1x2x4x4xf32>, %s1: tensor<1x2x4x4xf32>, %theta: tensor<2x3xf32>, %i: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{theta must have shape H x (number of score operands) = [2, 2], got [2, 3]}}
  %f = hkt.convex_fuse ins(%s0, %s1 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) theta(%theta : tensor<2x3xf32>) outs(%i : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %f : tensor<1x2x4x4xf32>
}

// -----

func.func @mask_rank(%s: tensor<2x4x4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{input must be B x H x Tq x Tk (rank 4), got rank 3}}
  %m = hkt.mask ins(%s : tensor<2x4x4xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %m : tensor<2x4x4xf32>
}

// -----

func.func @mask_init(%s: tensor<1x2x4x4xf32>, %i: tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32> {
  // expected-error @+1 {{init must have shape B x H x Tq x Tk = [1, 2, 4, 4], got [1, 2, 4, 5]}}
  %m = hkt.mask ins(%s : tensor<1x2x4x4xf32>) outs(%i : tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32>
  return %m : tensor<1x2x4x5xf32>
}

// -----

func.func @mask_causal_square(%s: tensor<1x2x4x6xf32>, %i: tensor<1x2x4x6xf32>) -> tensor<1x2x4x6xf32> {
  // expected-error @+1 {{causal masking needs square scores, got Tq = 4 and Tk = 6}}
  %m = hkt.mask ins(%s : tensor<1x2x4x6xf32>) outs(%i : tensor<1x2x4x6xf32>) {causal = true} -> tensor<1x2x4x6xf32>
  return %m : tensor<1x2x4x6xf32>
}

// -----

func.func @mask_lengths(%s: tensor<2x2x4x4xf32>, %len: tensor<3xi32>, %i: tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> {
  // expected-error @+1 {{lengths must have shape B = [2], got [3]}}
  %m = hkt.mask ins(%s : tensor<2x2x4x4xf32>) lengths(%len : tensor<3xi32>) outs(%i : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  return %m : tensor<2x2x4x4xf32>
}

// -----

func.func @mask_lengths_float(%s: tensor<2x2x4x4xf32>, %len: tensor<2xf32>, %i: tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> {
  // expected-error @+1 {{operand #1 must be ranked tensor of signless integer values, but got}}
  %m = hkt.mask ins(%s : tensor<2x2x4x4xf32>) lengths(%len : tensor<2xf32>) outs(%i : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  return %m : tensor<2x2x4x4xf32>
}

// -----

func.func @attend_probs_rank(%p: tensor<2x4x4xf32>, %v: tensor<2x4x4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{probs must be B x H x Tq x Tk (rank 4), got rank 3}}
  %a = hkt.attend ins(%p, %v : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %a : tensor<2x4x4xf32>
}

// -----

func.func @attend_value_rank(%p: tensor<2x2x4x4xf32>, %v: tensor<4x4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{value must be B x Tk x D (rank 3), got rank 2}}
  %a = hkt.attend ins(%p, %v : tensor<2x2x4x4xf32>, tensor<4x4xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %a : tensor<2x4x4xf32>
}

// -----

func.func @attend_value_length(%p: tensor<2x2x4x4xf32>, %v: tensor<2x5x4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{value must have shape B x Tk x D = [2, 4, 4], got [2, 5, 4]}}
  %a = hkt.attend ins(%p, %v : tensor<2x2x4x4xf32>, tensor<2x5x4xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %a : tensor<2x4x4xf32>
}

// -----

func.func @attend_init(%p: tensor<2x2x3x4xf32>, %v: tensor<2x4x4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{init must have shape B x Tq x D = [2, 3, 4], got [2, 4, 4]}}
  %a = hkt.attend ins(%p, %v : tensor<2x2x3x4xf32>, tensor<2x4x4xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %a : tensor<2x4x4xf32>
}

// -----

func.func @attend_heads(%p: tensor<2x3x4x4xf32>, %v: tensor<2x4x4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{model width D = 4 is not divisible by the number of heads H = 3}}
  %a = hkt.attend ins(%p, %v : tensor<2x3x4x4xf32>, tensor<2x4x4xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %a : tensor<2x4x4xf32>
}

// -----

func.func @hybrid_attn_rank(%a: tensor<4x4xf32>, %v: tensor<2x4x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{attn must be B x T x D (rank 3), got rank 2}}
  %o = hkt.hybrid ins(%a, %v, %u, %g : tensor<4x4xf32>, tensor<2x4x4xf32>, tensor<4x3xf32>, tensor<2xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %o : tensor<2x4x4xf32>
}

// -----

func.func @hybrid_conv_rank(%a: tensor<2x4x4xf32>, %v: tensor<2x4x4xf32>, %u: tensor<4xf32>, %g: tensor<2xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{conv_u must be D x kc (rank 2), got rank 1}}
  %o = hkt.hybrid ins(%a, %v, %u, %g : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<4xf32>, tensor<2xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %o : tensor<2x4x4xf32>
}

// -----

func.func @hybrid_gamma_rank(%a: tensor<2x4x4xf32>, %v: tensor<2x4x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2x1xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{gamma must be H (rank 1), got rank 2}}
  %o = hkt.hybrid ins(%a, %v, %u, %g : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<4x3xf32>, tensor<2x1xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %o : tensor<2x4x4xf32>
}

// -----

func.func @hybrid_value(%a: tensor<2x4x4xf32>, %v: tensor<2x5x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{value must have shape B x T x D = [2, 4, 4], got [2, 5, 4]}}
  %o = hkt.hybrid ins(%a, %v, %u, %g : tensor<2x4x4xf32>, tensor<2x5x4xf32>, tensor<4x3xf32>, tensor<2xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %o : tensor<2x4x4xf32>
}

// -----

func.func @hybrid_init(%a: tensor<2x4x4xf32>, %v: tensor<2x4x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %i: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> {
  // expected-error @+1 {{init must have shape B x T x D = [2, 4, 4], got [1, 4, 4]}}
  %o = hkt.hybrid ins(%a, %v, %u, %g : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<4x3xf32>, tensor<2xf32>) outs(%i : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %o : tensor<1x4x4xf32>
}

// -----

func.func @hybrid_conv_width(%a: tensor<2x4x4xf32>, %v: tensor<2x4x4xf32>, %u: tensor<8x3xf32>, %g: tensor<2xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{conv_u must have shape D x kc = [4, 3], got [8, 3]}}
  %o = hkt.hybrid ins(%a, %v, %u, %g : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<8x3xf32>, tensor<2xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %o : tensor<2x4x4xf32>
}

// -----

func.func @hybrid_heads(%a: tensor<2x4x4xf32>, %v: tensor<2x4x4xf32>, %u: tensor<4x3xf32>, %g: tensor<3xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{model width D = 4 is not divisible by the number of heads H = 3}}
  %o = hkt.hybrid ins(%a, %v, %u, %g : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<4x3xf32>, tensor<3xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %o : tensor<2x4x4xf32>
}

// -----

func.func @downsample_stride_cap(%x: tensor<2x8x4xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>, %i: tensor<2x1x4xf32>) -> tensor<2x1x4xf32> {
  // expected-error @+1 {{stride = 1025 exceeds 1024 (see docs/limits.md)}}
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<4x3xf32>, tensor<4xf32>) outs(%i : tensor<2x1x4xf32>) stride = 1025 -> tensor<2x1x4xf32>
  return %y : tensor<2x1x4xf32>
}

// -----

func.func @downsample_kernel_cap(%x: tensor<2x8x4xf32>, %w: tensor<4x1025xf32>, %b: tensor<4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{kernel size = 1025 exceeds 1024 (see docs/limits.md)}}
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<4x1025xf32>, tensor<4xf32>) outs(%i : tensor<2x4x4xf32>) stride = 2 -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}

// -----

func.func @upsample_factor_cap(%s: tensor<2x2x1x1xf32>, %i: tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32> {
  // expected-error @+1 {{factor = 4294967296 exceeds 1024 (see docs/limits.md)}}
  %u = hkt.upsample ins(%s : tensor<2x2x1x1xf32>) outs(%i : tensor<2x2x8x8xf32>) factor = 4294967296 -> tensor<2x2x8x8xf32>
  return %u : tensor<2x2x8x8xf32>
}
