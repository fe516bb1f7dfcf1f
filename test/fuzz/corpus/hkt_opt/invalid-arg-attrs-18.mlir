func.func @dims_scalar(%x: f32 {hkt.dims = ["B"]}) {
  return
}
