// Working memory of a chain: three 16 x 16 f32 buffers (1088 bytes counted
// each with its alignment), the first dead once the second is computed from
// it (hkt-dealloc-after-last-use frees it there), the matmul's result from
// the second: at most two are live at once, 2176 bytes, not 3264.
#id = affine_map<(i, j) -> (i, j)>
func.func @chain(%a: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %e1 = tensor.empty() : tensor<16x16xf32>
  %t1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<16x16xf32>) outs(%e1 : tensor<16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  %e2 = tensor.empty() : tensor<16x16xf32>
  %t2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t1 : tensor<16x16xf32>) outs(%e2 : tensor<16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  %z = arith.constant 0.0 : f32
  %e3 = tensor.empty() : tensor<16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e3 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %m = linalg.matmul ins(%t2, %t2 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %m : tensor<16x16xf32>
}
