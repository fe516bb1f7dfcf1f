func.func @bounds_scalar(%x: f32 {hkt.bounds = array<i64: 4>}) {
  return
}
