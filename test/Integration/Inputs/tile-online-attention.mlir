// A transform library for fuse-chain.test: hkt.online_attention tiled by
// upstream transforms (2-row query tiles in parallel, 2-key tiles in
// sequence), then each tile decomposed by the op's own decomposition.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["hkt.online_attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %rows, %forall = transform.structured.tile_using_forall %op tile_sizes [1, 1, 2, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tile, %for = transform.structured.tile_using_for %rows tile_sizes [0, 0, 0, 2] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_registered_pass "hkt-decompose" to %funcs : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
