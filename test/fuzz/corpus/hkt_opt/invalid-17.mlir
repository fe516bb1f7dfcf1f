func.func @upsample_factor_zero(%s: tensor<2x2x4x4xf32>, %i: tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32> {
  %u = hkt.upsample ins(%s : tensor<2x2x4x4xf32>) outs(%i : tensor<2x2x8x8xf32>) factor = 0 -> tensor<2x2x8x8xf32>
  return %u : tensor<2x2x8x8xf32>
}
