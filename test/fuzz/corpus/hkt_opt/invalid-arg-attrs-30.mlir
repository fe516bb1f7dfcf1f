func.func @inout_type(%p: tensor<4xf32> {hkt.role = "inout"}, %q: tensor<5xf32>) -> (tensor<5xf32> {hkt.inout = 0 : i64}) {
  return %q : tensor<5xf32>
}
