func.func @scaled(%x: tensor<4xf32>, %s: f32) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
