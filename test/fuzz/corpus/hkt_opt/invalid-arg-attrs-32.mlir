func.func @inout_twice(%p: tensor<4xf32> {hkt.role = "inout"}) -> (tensor<4xf32> {hkt.inout = 0 : i64}, tensor<4xf32> {hkt.inout = 0 : i64}) {
  return %p, %p : tensor<4xf32>, tensor<4xf32>
}
