func.func @default_string(%x: tensor<2xf32> {hkt.default = "one"}) {
  return
}
