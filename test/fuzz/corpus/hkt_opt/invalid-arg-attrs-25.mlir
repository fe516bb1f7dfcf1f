func.func @unknown_argument_attribute(%x: tensor<4xf32> {hkt.nmae = "x"}) {
  return
}
