func.func @result_name_empty(%x: tensor<4xf32>) -> (tensor<4xf32> {hkt.name = ""}) {
  return %x : tensor<4xf32>
}
