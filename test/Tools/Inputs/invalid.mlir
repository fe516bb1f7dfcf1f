func.func @bad(%x: tensor<2x8x4xf32>, %w: tensor<5x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x4xf32> {
  %init = tensor.empty() : tensor<2x4x4xf32>
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<5x3xf32>, tensor<4xf32>) outs(%init : tensor<2x4x4xf32>) stride = 2 -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}
