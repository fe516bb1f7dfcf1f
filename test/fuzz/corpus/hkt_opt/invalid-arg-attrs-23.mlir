func.func @dims_unnamed(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8, 4>, hkt.dims = ["", ""]}) {
  return
}
