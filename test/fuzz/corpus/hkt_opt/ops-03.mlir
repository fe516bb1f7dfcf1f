func.func @upsample(%s: tensor<2x4x10x10xf32>, %init: tensor<2x4x37x37xf32>) -> tensor<2x4x37x37xf32> {
  %u = hkt.upsample ins(%s : tensor<2x4x10x10xf32>) outs(%init : tensor<2x4x37x37xf32>) factor = 4 -> tensor<2x4x37x37xf32>
  return %u : tensor<2x4x37x37xf32>
}
