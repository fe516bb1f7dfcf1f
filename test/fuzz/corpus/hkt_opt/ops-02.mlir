func.func @level_scores(%q: tensor<2x19x32xf32>, %k: tensor<2x19x32xf32>, %init: tensor<2x4x19x19xf32>) -> tensor<2x4x19x19xf32> {
  %s = hkt.level_scores ins(%q, %k : tensor<2x19x32xf32>, tensor<2x19x32xf32>) outs(%init : tensor<2x4x19x19xf32>) -> tensor<2x4x19x19xf32>
  return %s : tensor<2x4x19x19xf32>
}
