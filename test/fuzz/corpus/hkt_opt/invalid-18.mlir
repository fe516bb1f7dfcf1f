func.func @fuse_no_scores(%theta: tensor<2x1xf32>, %i: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %f = "hkt.convex_fuse"(%theta, %i) : (tensor<2x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %f : tensor<1x2x4x4xf32>
}
