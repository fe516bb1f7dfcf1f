func.func @factors_not_dense_array(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>) -> tensor<2x8x4xf32> {
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<2x8x4xf32>) keys(%k0 : tensor<2x8x4xf32>) values(%v : tensor<2x8x4xf32>) outs(%a, %m, %s : tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) {factors = [1]} -> tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>
  return %acc : tensor<2x8x4xf32>
}
