// RUN: hkt-opt %s --split-input-file --hkt-differentiate --verify-diagnostics
// RUN: not hkt-opt %s --split-input-file --hkt-differentiate=functions=nosuch 2>&1 | FileCheck %s --check-prefix=NOSUCH
// What hkt-differentiate refuses, each with a diagnostic at the op or function.
// NOSUCH: error: hkt-differentiate: no function 'nosuch'

// An op on float tensors without an adjoint (AdjointOpInterface) and without
// a decomposition.
func.func @generic(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{'linalg.generic' op has no adjoint (AdjointOpInterface), so hkt-differentiate cannot differentiate through it}}
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A dynamic shape needs its symbols (hkt.dims): the gradients take them.
// expected-error @+1 {{hkt-differentiate: an argument or result of dynamic shape needs 'hkt.dims' (its gradient takes its symbols), got 'tensor<?xf32>'}}
func.func @dynamic(%a: tensor<?xf32>) -> tensor<?xf32> {
  return %a : tensor<?xf32>
}

// -----

// Control flow: one block only.
// expected-error @+1 {{hkt-differentiate: the function must be one block}}
func.func @branches(%a: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^bb1
^bb1:
  return %a : tensor<4xf32>
}

// -----

// The gradient function's name is taken.
// expected-error @+1 {{hkt-differentiate: 'taken_grad' exists already}}
func.func @taken(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
func.func private @taken_grad(%a: tensor<4xf32>) -> tensor<4xf32>
