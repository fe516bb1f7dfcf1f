func.func @range_on_result(%x: tensor<4xi32>) -> (tensor<4xi32> {hkt.range = array<i64: 0, 1>}) {
  return %x : tensor<4xi32>
}
