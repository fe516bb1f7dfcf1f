func.func @hybrid(%a: tensor<2x37x32xf32>, %v: tensor<2x37x32xf32>, %u: tensor<32x3xf32>, %g: tensor<4xf32>, %init: tensor<2x37x32xf32>) -> tensor<2x37x32xf32> {
  %o = hkt.hybrid ins(%a, %v, %u, %g : tensor<2x37x32xf32>, tensor<2x37x32xf32>, tensor<32x3xf32>, tensor<4xf32>) outs(%init : tensor<2x37x32xf32>) -> tensor<2x37x32xf32>
  return %o : tensor<2x37x32xf32>
}
