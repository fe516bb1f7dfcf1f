func.func @downsample(%x: tensor<2x37x32xf32>, %w: tensor<32x3xf32>, %b: tensor<32xf32>, %init: tensor<2x19x32xf32>) -> tensor<2x19x32xf32> {
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x37x32xf32>, tensor<32x3xf32>, tensor<32xf32>) outs(%init : tensor<2x19x32xf32>) stride = 2 -> tensor<2x19x32xf32>
  return %y : tensor<2x19x32xf32>
}
