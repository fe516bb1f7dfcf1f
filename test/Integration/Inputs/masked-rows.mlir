// A hand-written chain whose key lengths come in unchecked (no hkt.range), so
// a batch row can have every key masked: lengths = [0, 3]. SPEC's layer never
// does this (len >= 1); the fused path is specified to give 0 for such rows.
func.func @masked(%q: tensor<2x6x4xf32> {hkt.name = "q"}, %k: tensor<2x6x4xf32> {hkt.name = "k"},
                  %theta: tensor<2x1xf32> {hkt.name = "theta"}, %v: tensor<2x6x4xf32> {hkt.name = "v"},
                  %len: tensor<2xi32> {hkt.name = "lengths"})
    -> (tensor<2x6x4xf32> {hkt.name = "attn"}) {
  %e = tensor.empty() : tensor<2x2x6x6xf32>
  %ea = tensor.empty() : tensor<2x6x4xf32>
  %s = hkt.level_scores ins(%q, %k : tensor<2x6x4xf32>, tensor<2x6x4xf32>) outs(%e : tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
  %f = hkt.convex_fuse ins(%s : tensor<2x2x6x6xf32>) theta(%theta : tensor<2x1xf32>) outs(%e : tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
  %m = hkt.mask ins(%f : tensor<2x2x6x6xf32>) lengths(%len : tensor<2xi32>) outs(%e : tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
  %p = linalg.softmax dimension(3) ins(%m : tensor<2x2x6x6xf32>) outs(%e : tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
  %a = hkt.attend ins(%p, %v : tensor<2x2x6x6xf32>, tensor<2x6x4xf32>) outs(%ea : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %a : tensor<2x6x4xf32>
}
