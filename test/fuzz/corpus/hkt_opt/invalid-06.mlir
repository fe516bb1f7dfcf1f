func.func @downsample_stride_zero(%x: tensor<2x8x4xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<4x3xf32>, tensor<4xf32>) outs(%i : tensor<2x4x4xf32>) stride = 0 -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}
