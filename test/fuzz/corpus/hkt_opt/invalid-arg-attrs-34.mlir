func.func @role_on_result(%x: tensor<4xf32>) -> (tensor<4xf32> {hkt.role = "output"}) {
  return %x : tensor<4xf32>
}
