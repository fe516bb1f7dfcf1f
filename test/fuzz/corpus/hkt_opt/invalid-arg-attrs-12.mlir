func.func @inout_on_argument(%p: tensor<4xf32> {hkt.inout = 0 : i64}) {
  return
}
