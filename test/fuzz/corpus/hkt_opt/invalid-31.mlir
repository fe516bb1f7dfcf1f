func.func @attend_heads(%p: tensor<2x3x4x4xf32>, %v: tensor<2x4x4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %a = hkt.attend ins(%p, %v : tensor<2x3x4x4xf32>, tensor<2x4x4xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %a : tensor<2x4x4xf32>
}
