// Working memory of a known size: after bufferization the entry allocates
// two 16 x 16 f32 buffers (1024 bytes each, 64-byte aligned: 1088 counted
// each, 2176 in all): %t, and the matmul's result, which the pipeline
// computes in its own buffer and copies into the out-parameter.
#id = affine_map<(i, j) -> (i, j)>
func.func @f(%a: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %e = tensor.empty() : tensor<16x16xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e2 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %m = linalg.matmul ins(%t, %t : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %m : tensor<16x16xf32>
}
