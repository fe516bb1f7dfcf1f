func.func @fuse_init_rank(%s: tensor<1x2x4x4xf32>, %theta: tensor<2x1xf32>, %i: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %f = hkt.convex_fuse ins(%s : tensor<1x2x4x4xf32>) theta(%theta : tensor<2x1xf32>) outs(%i : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %f : tensor<2x4x4xf32>
}
