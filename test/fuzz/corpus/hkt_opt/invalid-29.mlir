func.func @attend_value_length(%p: tensor<2x2x4x4xf32>, %v: tensor<2x5x4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %a = hkt.attend ins(%p, %v : tensor<2x2x4x4xf32>, tensor<2x5x4xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %a : tensor<2x4x4xf32>
}
