func.func @name_not_string(%x: tensor<4xf32> {hkt.name = 3 : i64}) {
  return
}
