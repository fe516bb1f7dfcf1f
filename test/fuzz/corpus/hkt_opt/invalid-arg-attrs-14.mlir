func.func @bounds_rank(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8>}) {
  return
}
