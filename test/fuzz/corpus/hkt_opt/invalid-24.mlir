func.func @mask_causal_square(%s: tensor<1x2x4x6xf32>, %i: tensor<1x2x4x6xf32>) -> tensor<1x2x4x6xf32> {
  %m = hkt.mask ins(%s : tensor<1x2x4x6xf32>) outs(%i : tensor<1x2x4x6xf32>) {causal = true} -> tensor<1x2x4x6xf32>
  return %m : tensor<1x2x4x6xf32>
}
