func.func @one_offset(%q0: tensor<2x8x4xf32>, %k0: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %a: tensor<2x8x4xf32>, %m: tensor<2x2x8xf32>, %s: tensor<2x2x8xf32>, %i0: index) -> tensor<2x8x4xf32> {
  %r:3 = "hkt.online_attention"(%q0, %k0, %v, %i0, %a, %m, %s) <{factors = array<i64: 1>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 1, 1, 1>}> : (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, index, tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> (tensor<2x8x4xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>)
  return %r#0 : tensor<2x8x4xf32>
}
