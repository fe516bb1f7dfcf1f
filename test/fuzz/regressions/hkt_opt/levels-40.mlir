module {
  func.func @layer(%arg0: tensor<1x1x1xf32> {hkt.name = "x"}, %arg1: tensor<1x1x1xf32> {hkt.name = "wq", hkt.role = "parameter"}, %arg2: tensor<1x1x1xf32> {hkt.name = "wk", hkt.role = "parameter"}, %arg3: tensor<1x1xf32> {hkt.name = "wv", hkt.role = "parameter"}, %arg4: tensor<1x1xf32> {hkt.name = "wo", hkt.role = "parameter"}, %arg5: tensor<1x1xf32> {hkt.name = "theta", hkt.role = "parameter"}, %arg6: tensor<1xi32> {hkt.default = 1 : i32, hkt.name = "lengths", hkt.range = array<i64: 1, 1>}) -> (tensor<1x1x1xf32> {hkt.name = "y"}) {
    %0 = tensor.empty() : tensor<1x1x1xf32>
    %1 = hkt.attention ins(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5 : tensor<1x1x1xf32>, tensor<1x1x1xf32>, tensor<1x1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>) lengths(%arg6 : tensor<1xi32>) outs(%0 : tensor<1x1x1xf32>) {heads = 1 : i64, levels = 40 : i64} -> tensor<1x1x1xf32>
    return %1 : tensor<1x1x1xf32>
  }
}

