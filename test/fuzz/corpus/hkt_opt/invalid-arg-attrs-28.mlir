func.func @inout_not_integer(%p: tensor<4xf32>) -> (tensor<4xf32> {hkt.inout = "p"}) {
  return %p : tensor<4xf32>
}
