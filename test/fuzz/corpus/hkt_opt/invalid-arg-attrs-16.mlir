func.func @bounds_static(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8, 5>}) {
  return
}
