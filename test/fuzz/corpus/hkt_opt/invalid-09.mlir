func.func @scores_init_rank(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %i: tensor<2x8x8xf32>) -> tensor<2x8x8xf32> {
  %s = hkt.level_scores ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%i : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %s : tensor<2x8x8xf32>
}
