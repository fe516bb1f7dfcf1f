// A transform library for gradients.test: hkt.online_attention_backward
// tiled by upstream transforms through its TilingInterface (batch x head in
// parallel, then 4-key tiles and 4-query tiles in sequence: both are
// reductions of the backward), then each tile decomposed by the op's own
// decomposition.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["hkt.online_attention_backward"]} in %root : (!transform.any_op) -> !transform.any_op
    %heads, %forall = transform.structured.tile_using_forall %op tile_sizes [1, 1, 0, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %keys, %for0 = transform.structured.tile_using_for %heads tile_sizes [0, 0, 0, 4] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tile, %for1 = transform.structured.tile_using_for %keys tile_sizes [0, 0, 4, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_registered_pass "hkt-decompose" to %funcs : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
