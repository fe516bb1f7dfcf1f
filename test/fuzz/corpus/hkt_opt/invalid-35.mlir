func.func @hybrid_value(%a: tensor<2x4x4xf32>, %v: tensor<2x5x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %o = hkt.hybrid ins(%a, %v, %u, %g : tensor<2x4x4xf32>, tensor<2x5x4xf32>, tensor<4x3xf32>, tensor<2xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %o : tensor<2x4x4xf32>
}
