func.func @inout_without_role(%p: tensor<4xf32> {hkt.role = "parameter"}) -> (tensor<4xf32> {hkt.inout = 0 : i64}) {
  return %p : tensor<4xf32>
}
