func.func @layer(%x: tensor<2x8x4xf32> {hkt.name = "x"},
                 %wv: tensor<4x4xf32> {hkt.name = "wv", hkt.role = "parameter"},
                 %len: tensor<2xi32> {hkt.name = "lengths", hkt.role = "input", hkt.default = 8 : i32, hkt.range = array<i64: 1, 8>})
    -> (tensor<2x8x4xf32> {hkt.name = "y"}) {
  return %x : tensor<2x8x4xf32>
}

func.func @step(%p: tensor<4xf32> {hkt.role = "inout"},
                %m: tensor<4xf32> {hkt.name = "m", hkt.role = "inout"},
                %lr: tensor<f32> {hkt.name = "lr", hkt.default = 0.1 : f32})
    -> (tensor<f32> {hkt.name = "loss"}, tensor<4xf32> {hkt.inout = 1 : i64},
        tensor<4xf32> {hkt.inout = 0 : i64}) {
  return %lr, %m, %p : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

func.func @dynamic(%a: tensor<?x?x16xi32> {hkt.bounds = array<i64: 8, 8, 16>, hkt.dims = ["N", "N", ""]},
                   %b: tensor<?xf32> {hkt.bounds = array<i64: 8>, hkt.dims = ["N"]},
                   %c: tensor<?x4xf32> {hkt.bounds = array<i64: 32, 4>}) {
  return
}
