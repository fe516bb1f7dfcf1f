func.func @inout_without_result(%p: tensor<4xf32> {hkt.role = "inout"}) -> tensor<4xf32> {
  return %p : tensor<4xf32>
}
