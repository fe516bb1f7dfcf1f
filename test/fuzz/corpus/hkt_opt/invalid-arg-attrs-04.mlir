func.func @default_outside_range(%x: tensor<2xi32> {hkt.default = 65 : i32, hkt.range = array<i64: 1, 64>}) {
  return
}
