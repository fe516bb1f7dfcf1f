func.func @dup(%a: tensor<4xf32> {hkt.name = "x"}, %b: tensor<4xf32> {hkt.name = "x"}) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
