func.func @fuse_theta(%s0: tensor<1x2x4x4xf32>, %s1: tensor<1x2x4x4xf32>, %theta: tensor<2x3xf32>, %i: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %f = hkt.convex_fuse ins(%s0, %s1 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) theta(%theta : tensor<2x3xf32>) outs(%i : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %f : tensor<1x2x4x4xf32>
}
