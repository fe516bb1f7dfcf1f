// Two entries written by hand: names from hkt.name, default names otherwise,
// and a private helper that is not an entry.
func.func @upsample(%s: tensor<1x2x3x3xf32> {hkt.name = "scores"}) -> (tensor<1x2x5x6xf32> {hkt.name = "up"}) {
  %init = tensor.empty() : tensor<1x2x5x6xf32>
  %u = hkt.upsample ins(%s : tensor<1x2x3x3xf32>) outs(%init : tensor<1x2x5x6xf32>) factor = 2 -> tensor<1x2x5x6xf32>
  return %u : tensor<1x2x5x6xf32>
}

func.func @downsample(%x: tensor<2x7x3xf32>, %w: tensor<3x2xf32>, %b: tensor<3xf32>) -> tensor<2x3x3xf32> {
  %init = tensor.empty() : tensor<2x3x3xf32>
  %y = call @helper(%x, %w, %b, %init) : (tensor<2x7x3xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  return %y : tensor<2x3x3xf32>
}

func.func private @helper(%x: tensor<2x7x3xf32>, %w: tensor<3x2xf32>, %b: tensor<3xf32>, %init: tensor<2x3x3xf32>) -> tensor<2x3x3xf32> {
  %y = hkt.downsample ins(%x, %w, %b : tensor<2x7x3xf32>, tensor<3x2xf32>, tensor<3xf32>) outs(%init : tensor<2x3x3xf32>) stride = 3 -> tensor<2x3x3xf32>
  return %y : tensor<2x3x3xf32>
}
