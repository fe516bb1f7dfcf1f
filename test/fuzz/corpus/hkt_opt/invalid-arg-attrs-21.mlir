func.func @dims_without_bounds(%x: tensor<?x4xf32> {hkt.dims = ["B", ""]}) {
  return
}
