func.func @range_on_float(%x: tensor<2xf32> {hkt.range = array<i64: 0, 1>}) {
  return
}
