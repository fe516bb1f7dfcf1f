func.func @attend(%p: tensor<2x4x37x37xf32>, %v: tensor<2x37x32xf32>, %init: tensor<2x37x32xf32>) -> tensor<2x37x32xf32> {
  %a = hkt.attend ins(%p, %v : tensor<2x4x37x37xf32>, tensor<2x37x32xf32>) outs(%init : tensor<2x37x32xf32>) -> tensor<2x37x32xf32>
  return %a : tensor<2x37x32xf32>
}
