func.func @attention_full(%x: tensor<2x64x32xf32>, %wq: tensor<3x32x32xf32>, %wk: tensor<3x32x32xf32>, %wv: tensor<32x32xf32>, %wo: tensor<32x32xf32>, %theta: tensor<4x3xf32>, %dw: tensor<2x32x3xf32>, %db: tensor<2x32xf32>, %u: tensor<32x3xf32>, %g: tensor<4xf32>, %len: tensor<2xi32>) -> tensor<2x64x32xf32> {
  %init = tensor.empty() : tensor<2x64x32xf32>
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x64x32xf32>, tensor<3x32x32xf32>, tensor<3x32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<4x3xf32>)
         downsample(%dw, %db : tensor<2x32x3xf32>, tensor<2x32xf32>)
         conv(%u, %g : tensor<32x3xf32>, tensor<4xf32>)
         lengths(%len : tensor<2xi32>)
         outs(%init : tensor<2x64x32xf32>) {causal = true, heads = 4 : i64, hybrid = true, levels = 3 : i64} -> tensor<2x64x32xf32>
  return %y : tensor<2x64x32xf32>
}
