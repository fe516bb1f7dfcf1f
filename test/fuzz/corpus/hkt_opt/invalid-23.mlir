func.func @mask_init(%s: tensor<1x2x4x4xf32>, %i: tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32> {
  %m = hkt.mask ins(%s : tensor<1x2x4x4xf32>) outs(%i : tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32>
  return %m : tensor<1x2x4x5xf32>
}
