func.func @role_output(%x: tensor<2xf32>, %y: tensor<2xf32> {hkt.role = "output"}) {
  return
}
