func.func @inout_result_named(%p: tensor<4xf32> {hkt.role = "inout"}) -> (tensor<4xf32> {hkt.inout = 0 : i64, hkt.name = "p_new"}) {
  return %p : tensor<4xf32>
}
