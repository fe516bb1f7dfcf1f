func.func @mask_lengths(%s: tensor<2x2x4x4xf32>, %len: tensor<3xi32>, %i: tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> {
  %m = hkt.mask ins(%s : tensor<2x2x4x4xf32>) lengths(%len : tensor<3xi32>) outs(%i : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  return %m : tensor<2x2x4x4xf32>
}
