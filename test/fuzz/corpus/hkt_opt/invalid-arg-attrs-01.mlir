func.func @name_empty(%x: tensor<4xf32> {hkt.name = ""}) {
  return
}
