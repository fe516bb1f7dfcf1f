// A dynamic batch (docs/module-format.md, "Dynamic dimensions"): x is B x 4
// and mask B, with B <= 8 shared through the symbol "B"; y[c] = sum over the
// batch of x[b, c] * mask[b] * w[c]. Checked by test/Tools/module-format.test.
func.func @colsum(%x: tensor<?x4xf32> {hkt.name = "x", hkt.bounds = array<i64: 8, 4>, hkt.dims = ["B", ""]},
                  %m: tensor<?xf32> {hkt.name = "mask", hkt.bounds = array<i64: 8>, hkt.dims = ["B"]},
                  %w: tensor<4xf32> {hkt.name = "w", hkt.role = "parameter"})
    -> (tensor<4xf32> {hkt.name = "y"}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(b, c) -> (b, c)>, affine_map<(b, c) -> (b)>, affine_map<(b, c) -> (c)>, affine_map<(b, c) -> (c)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%x, %m, %w : tensor<?x4xf32>, tensor<?xf32>, tensor<4xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %k: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %q = arith.mulf %p, %k : f32
    %s = arith.addf %acc, %q : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// A result of dynamic shape, before a static one: y (B x 4, the symbol of x)
// = x * w, and s = sum(x). The caller allocates y at x's batch.
func.func @rowscale(%x: tensor<?x4xf32> {hkt.name = "x", hkt.bounds = array<i64: 8, 4>, hkt.dims = ["B", ""]},
                    %w: tensor<4xf32> {hkt.name = "w", hkt.role = "parameter"})
    -> (tensor<?x4xf32> {hkt.name = "y", hkt.dims = ["B", ""]}, tensor<f32> {hkt.name = "s"}) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(b, c) -> (b, c)>, affine_map<(b, c) -> (c)>, affine_map<(b, c) -> (b, c)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %w : tensor<?x4xf32>, tensor<4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<?x4xf32>
  %se = tensor.empty() : tensor<f32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, c) -> (b, c)>, affine_map<(b, c) -> ()>],
                       iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<?x4xf32>) outs(%s0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %y, %s : tensor<?x4xf32>, tensor<f32>
}
