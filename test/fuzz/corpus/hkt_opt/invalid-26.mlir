func.func @mask_lengths_float(%s: tensor<2x2x4x4xf32>, %len: tensor<2xf32>, %i: tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> {
  %m = hkt.mask ins(%s : tensor<2x2x4x4xf32>) lengths(%len : tensor<2xf32>) outs(%i : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  return %m : tensor<2x2x4x4xf32>
}
