func.func @default_float_on_int(%x: tensor<2xi32> {hkt.default = 1.5 : f32}) {
  return
}
