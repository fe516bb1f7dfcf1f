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
