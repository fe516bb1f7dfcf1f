func.func @online_attention_one_level(%q: tensor<1x5x4xf32>, %k: tensor<1x7x4xf32>, %v: tensor<1x7x4xf32>, %a: tensor<1x5x4xf32>, %m: tensor<1x2x5xf32>, %s: tensor<1x2x5xf32>) -> (tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>) {
  %acc, %max, %sum = hkt.online_attention ins(%q : tensor<1x5x4xf32>) keys(%k : tensor<1x7x4xf32>) values(%v : tensor<1x7x4xf32>) outs(%a, %m, %s : tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>) {factors = array<i64: 1>, causal = false} -> tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>
  return %acc, %max, %sum : tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>
}
