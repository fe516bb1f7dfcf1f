// SPEC 3-6 written by hand as step ops: two levels, stride 2, causal,
// B = 1, T = 10 (level 1: T = 5), D = 4, H = 2. The inputs are the per-level
// queries and keys, theta and the values; the result is the attention output.
//
// @fusable is the exact chain hkt-fuse matches; @not_fusable computes the same
// maths with the level-1 upsampling written as a nearest-neighbour
// linalg.generic, which hkt-fuse leaves alone (it takes the materialised path
// in every pipeline).

func.func @fusable(%q0: tensor<1x10x4xf32> {hkt.name = "q0"}, %k0: tensor<1x10x4xf32> {hkt.name = "k0"},
                   %q1: tensor<1x5x4xf32> {hkt.name = "q1"}, %k1: tensor<1x5x4xf32> {hkt.name = "k1"},
                   %theta: tensor<2x2xf32> {hkt.name = "theta"}, %v: tensor<1x10x4xf32> {hkt.name = "v"})
    -> (tensor<1x10x4xf32> {hkt.name = "attn"}) {
  %e0 = tensor.empty() : tensor<1x2x10x10xf32>
  %e1 = tensor.empty() : tensor<1x2x5x5xf32>
  %eu = tensor.empty() : tensor<1x2x10x10xf32>
  %ef = tensor.empty() : tensor<1x2x10x10xf32>
  %em = tensor.empty() : tensor<1x2x10x10xf32>
  %ep = tensor.empty() : tensor<1x2x10x10xf32>
  %ea = tensor.empty() : tensor<1x10x4xf32>
  %s0 = hkt.level_scores ins(%q0, %k0 : tensor<1x10x4xf32>, tensor<1x10x4xf32>) outs(%e0 : tensor<1x2x10x10xf32>) -> tensor<1x2x10x10xf32>
  %s1 = hkt.level_scores ins(%q1, %k1 : tensor<1x5x4xf32>, tensor<1x5x4xf32>) outs(%e1 : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %u1 = hkt.upsample ins(%s1 : tensor<1x2x5x5xf32>) outs(%eu : tensor<1x2x10x10xf32>) factor = 2 -> tensor<1x2x10x10xf32>
  %f = hkt.convex_fuse ins(%s0, %u1 : tensor<1x2x10x10xf32>, tensor<1x2x10x10xf32>) theta(%theta : tensor<2x2xf32>) outs(%ef : tensor<1x2x10x10xf32>) -> tensor<1x2x10x10xf32>
  %m = hkt.mask ins(%f : tensor<1x2x10x10xf32>) outs(%em : tensor<1x2x10x10xf32>) {causal = true} -> tensor<1x2x10x10xf32>
  %p = linalg.softmax dimension(3) ins(%m : tensor<1x2x10x10xf32>) outs(%ep : tensor<1x2x10x10xf32>) -> tensor<1x2x10x10xf32>
  %a = hkt.attend ins(%p, %v : tensor<1x2x10x10xf32>, tensor<1x10x4xf32>) outs(%ea : tensor<1x10x4xf32>) -> tensor<1x10x4xf32>
  return %a : tensor<1x10x4xf32>
}

#nearest2 = affine_map<(b, h, i, j) -> (b, h, i floordiv 2, j floordiv 2)>
#identity4 = affine_map<(b, h, i, j) -> (b, h, i, j)>

func.func @not_fusable(%q0: tensor<1x10x4xf32> {hkt.name = "q0"}, %k0: tensor<1x10x4xf32> {hkt.name = "k0"},
                       %q1: tensor<1x5x4xf32> {hkt.name = "q1"}, %k1: tensor<1x5x4xf32> {hkt.name = "k1"},
                       %theta: tensor<2x2xf32> {hkt.name = "theta"}, %v: tensor<1x10x4xf32> {hkt.name = "v"})
    -> (tensor<1x10x4xf32> {hkt.name = "attn"}) {
  %e0 = tensor.empty() : tensor<1x2x10x10xf32>
  %e1 = tensor.empty() : tensor<1x2x5x5xf32>
  %eu = tensor.empty() : tensor<1x2x10x10xf32>
  %ef = tensor.empty() : tensor<1x2x10x10xf32>
  %em = tensor.empty() : tensor<1x2x10x10xf32>
  %ep = tensor.empty() : tensor<1x2x10x10xf32>
  %ea = tensor.empty() : tensor<1x10x4xf32>
  %s0 = hkt.level_scores ins(%q0, %k0 : tensor<1x10x4xf32>, tensor<1x10x4xf32>) outs(%e0 : tensor<1x2x10x10xf32>) -> tensor<1x2x10x10xf32>
  %s1 = hkt.level_scores ins(%q1, %k1 : tensor<1x5x4xf32>, tensor<1x5x4xf32>) outs(%e1 : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %u1 = linalg.generic {indexing_maps = [#nearest2, #identity4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
          ins(%s1 : tensor<1x2x5x5xf32>) outs(%eu : tensor<1x2x10x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x2x10x10xf32>
  %f = hkt.convex_fuse ins(%s0, %u1 : tensor<1x2x10x10xf32>, tensor<1x2x10x10xf32>) theta(%theta : tensor<2x2xf32>) outs(%ef : tensor<1x2x10x10xf32>) -> tensor<1x2x10x10xf32>
  %m = hkt.mask ins(%f : tensor<1x2x10x10xf32>) outs(%em : tensor<1x2x10x10xf32>) {causal = true} -> tensor<1x2x10x10xf32>
  %p = linalg.softmax dimension(3) ins(%m : tensor<1x2x10x10xf32>) outs(%ep : tensor<1x2x10x10xf32>) -> tensor<1x2x10x10xf32>
  %a = hkt.attend ins(%p, %v : tensor<1x2x10x10xf32>, tensor<1x10x4xf32>) outs(%ea : tensor<1x10x4xf32>) -> tensor<1x10x4xf32>
  return %a : tensor<1x10x4xf32>
}
