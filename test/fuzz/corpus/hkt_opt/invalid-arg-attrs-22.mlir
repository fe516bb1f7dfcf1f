func.func @dims_static(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8, 4>, hkt.dims = ["B", "C"]}) {
  return
}
