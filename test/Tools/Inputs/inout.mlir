// In-out arguments (docs/module-format.md): each entry updates arguments in
// place; the argument says hkt.role = "inout", the result that carries its
// new value hkt.inout = <the argument's index>. Run and checked with numpy by
// test/Tools/module-format.test (Inputs/check_module_format.py).
#id = affine_map<(i, j) -> (i, j)>
#sc = affine_map<(i, j) -> ()>

// p <- p - lr * g; also returns sum(g * g).
func.func @sgd(%p: tensor<4x8xf32> {hkt.name = "p", hkt.role = "inout"},
               %g: tensor<4x8xf32> {hkt.name = "g"},
               %lr: tensor<f32> {hkt.name = "lr", hkt.role = "parameter"})
    -> (tensor<4x8xf32> {hkt.inout = 0 : i64}, tensor<f32> {hkt.name = "g2"}) {
  %e = tensor.empty() : tensor<4x8xf32>
  %new = linalg.generic {indexing_maps = [#id, #id, #sc, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %g, %lr : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %m = arith.mulf %c, %b : f32
    %s = arith.subf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %g2 = linalg.generic {indexing_maps = [#id, #sc], iterator_types = ["reduction", "reduction"]}
      ins(%g : tensor<4x8xf32>) outs(%init : tensor<f32>) {
  ^bb0(%b: f32, %acc: f32):
    %sq = arith.mulf %b, %b : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %new, %g2 : tensor<4x8xf32>, tensor<f32>
}

// Momentum: v <- mu * v + g, then p <- p - lr * v (the new v); the old p is
// also an output (its copy is taken before p is overwritten).
func.func @momentum(%p: tensor<16xf32> {hkt.name = "p", hkt.role = "inout"},
                    %v: tensor<16xf32> {hkt.name = "v", hkt.role = "inout"},
                    %g: tensor<16xf32> {hkt.name = "g"})
    -> (tensor<16xf32> {hkt.name = "p_old"}, tensor<16xf32> {hkt.inout = 1 : i64},
        tensor<16xf32> {hkt.inout = 0 : i64}) {
  %mu = arith.constant 0.9 : f32
  %lr = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<16xf32>
  %vn = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%v, %g : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %mu, %a : f32
    %s = arith.addf %m, %b : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %e2 = tensor.empty() : tensor<16xf32>
  %pn = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%p, %vn : tensor<16xf32>, tensor<16xf32>) outs(%e2 : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %lr, %b : f32
    %s = arith.subf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %p, %vn, %pn : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// Two in-out arguments trade values: each new value is the other's old one.
func.func @swap(%a: tensor<3xi32> {hkt.name = "a", hkt.role = "inout"},
                %b: tensor<3xi32> {hkt.name = "b", hkt.role = "inout"})
    -> (tensor<3xi32> {hkt.inout = 0 : i64}, tensor<3xi32> {hkt.inout = 1 : i64}) {
  return %b, %a : tensor<3xi32>, tensor<3xi32>
}
