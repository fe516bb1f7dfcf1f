func.func @range_three(%x: tensor<2xi32> {hkt.range = array<i64: 1, 2, 3>}) {
  return
}
