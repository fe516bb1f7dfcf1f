func.func @unknown_result_attribute(%x: tensor<4xf32>) -> (tensor<4xf32> {hkt.inplace = 0 : i64}) {
  return %x : tensor<4xf32>
}
