func.func @attention_mha(%x: tensor<1x5x4xf32>, %wq: tensor<1x4x4xf32>, %wk: tensor<1x4x4xf32>, %wv: tensor<4x4xf32>, %wo: tensor<4x4xf32>, %theta: tensor<2x1xf32>, %init: tensor<1x5x4xf32>) -> tensor<1x5x4xf32> {
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<1x5x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x1xf32>) outs(%init : tensor<1x5x4xf32>) {heads = 2 : i64, levels = 1 : i64, stride = 2 : i64, causal = false} -> tensor<1x5x4xf32>
  return %y : tensor<1x5x4xf32>
}
