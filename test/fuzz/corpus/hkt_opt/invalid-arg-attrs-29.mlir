func.func @inout_out_of_range(%p: tensor<4xf32>) -> (tensor<4xf32> {hkt.inout = 2 : i64}) {
  return %p : tensor<4xf32>
}
