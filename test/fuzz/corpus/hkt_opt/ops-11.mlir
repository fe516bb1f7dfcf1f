func.func @online_attention_three_levels(%q0: tensor<2x37x32xf32>, %q1: tensor<2x19x32xf32>, %q2: tensor<2x10x32xf32>, %k0: tensor<2x37x32xf32>, %k1: tensor<2x19x32xf32>, %k2: tensor<2x10x32xf32>, %v: tensor<2x37x32xf32>, %len: tensor<2xi32>, %a: tensor<2x37x32xf32>, %m: tensor<2x4x37xf32>, %s: tensor<2x4x37xf32>) -> (tensor<2x37x32xf32>, tensor<2x4x37xf32>, tensor<2x4x37xf32>) {
  %acc, %max, %sum = hkt.online_attention
      ins(%q0, %q1, %q2 : tensor<2x37x32xf32>, tensor<2x19x32xf32>, tensor<2x10x32xf32>)
      keys(%k0, %k1, %k2 : tensor<2x37x32xf32>, tensor<2x19x32xf32>, tensor<2x10x32xf32>)
      values(%v : tensor<2x37x32xf32>)
      lengths(%len : tensor<2xi32>)
      outs(%a, %m, %s : tensor<2x37x32xf32>, tensor<2x4x37xf32>, tensor<2x4x37xf32>)
      {causal = true, factors = array<i64: 1, 2, 4>}
      -> tensor<2x37x32xf32>, tensor<2x4x37xf32>, tensor<2x4x37xf32>
  return %acc, %max, %sum : tensor<2x37x32xf32>, tensor<2x4x37xf32>, tensor<2x4x37xf32>
}
