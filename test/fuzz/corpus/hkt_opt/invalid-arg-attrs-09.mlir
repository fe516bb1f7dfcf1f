func.func @role_not_string(%x: tensor<2xf32> {hkt.role = 1 : i64}) {
  return
}
