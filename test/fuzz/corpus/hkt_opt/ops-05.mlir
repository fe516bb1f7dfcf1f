func.func @mask(%s: tensor<2x4x37x37xf32>, %len: tensor<2xi32>, %init: tensor<2x4x37x37xf32>) -> (tensor<2x4x37x37xf32>, tensor<2x4x37x37xf32>) {
  %m = hkt.mask ins(%s : tensor<2x4x37x37xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x4x37x37xf32>) {causal = true} -> tensor<2x4x37x37xf32>
  %n = hkt.mask ins(%s : tensor<2x4x37x37xf32>) outs(%init : tensor<2x4x37x37xf32>) -> tensor<2x4x37x37xf32>
  return %m, %n : tensor<2x4x37x37xf32>, tensor<2x4x37x37xf32>
}
