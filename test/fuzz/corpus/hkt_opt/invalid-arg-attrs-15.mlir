func.func @bounds_not_array(%x: tensor<?x4xf32> {hkt.bounds = 8 : i64}) {
  return
}
