func.func @mask_rank(%s: tensor<2x4x4xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %m = hkt.mask ins(%s : tensor<2x4x4xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %m : tensor<2x4x4xf32>
}
