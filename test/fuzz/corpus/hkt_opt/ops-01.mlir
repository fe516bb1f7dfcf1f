func.func @downsample_stride3_dynamic(%x: tensor<1x?x8xf64>, %w: tensor<8x5xf64>, %b: tensor<8xf64>, %init: tensor<1x?x8xf64>) -> tensor<1x?x8xf64> {
  %y = hkt.downsample ins(%x, %w, %b : tensor<1x?x8xf64>, tensor<8x5xf64>, tensor<8xf64>) outs(%init : tensor<1x?x8xf64>) stride = 3 -> tensor<1x?x8xf64>
  return %y : tensor<1x?x8xf64>
}
