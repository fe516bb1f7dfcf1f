func.func @online_attention_tile(%q: tensor<1x4x4xf32>, %k: tensor<1x8x4xf32>, %v: tensor<1x8x4xf32>, %a: tensor<1x4x4xf32>, %m: tensor<1x1x4xf32>, %s: tensor<1x1x4xf32>, %i0: index, %j0: index) -> tensor<1x4x4xf32> {
  %acc, %max, %sum = hkt.online_attention ins(%q : tensor<1x4x4xf32>) keys(%k : tensor<1x8x4xf32>) values(%v : tensor<1x8x4xf32>) offsets(%i0, %j0) outs(%a, %m, %s : tensor<1x4x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>) {causal = true, factors = array<i64: 1>} -> tensor<1x4x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
  return %acc : tensor<1x4x4xf32>
}
