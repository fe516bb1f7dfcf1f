func.func @dims_not_strings(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8, 4>, hkt.dims = [1, 2]}) {
  return
}
