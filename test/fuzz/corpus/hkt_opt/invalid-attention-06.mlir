func.func @wo_shape(%x: tensor<2x8x4xf32>, %wq: tensor<3x4x4xf32>, %wk: tensor<3x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<3x4x4xf32>, %theta: tensor<2x3xf32>, %dw: tensor<2x4x3xf32>, %db: tensor<2x4xf32>, %u: tensor<4x3xf32>, %g: tensor<2xf32>, %len: tensor<2xi32>, %init: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<3x4x4xf32>, tensor<3x4x4xf32>, tensor<4x4xf32>, tensor<3x4x4xf32>, tensor<2x3xf32>) downsample(%dw, %db : tensor<2x4x3xf32>, tensor<2x4xf32>) conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>) lengths(%len : tensor<2xi32>) outs(%init : tensor<2x8x4xf32>) {heads = 2 : i64, levels = 3 : i64, hybrid = true} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}
