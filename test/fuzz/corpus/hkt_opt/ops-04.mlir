func.func @convex_fuse(%s0: tensor<2x4x37x37xf32>, %s1: tensor<2x4x37x37xf32>, %theta: tensor<4x2xf32>, %init: tensor<2x4x37x37xf32>) -> tensor<2x4x37x37xf32> {
  %f = hkt.convex_fuse ins(%s0, %s1 : tensor<2x4x37x37xf32>, tensor<2x4x37x37xf32>) theta(%theta : tensor<4x2xf32>) outs(%init : tensor<2x4x37x37xf32>) -> tensor<2x4x37x37xf32>
  return %f : tensor<2x4x37x37xf32>
}
