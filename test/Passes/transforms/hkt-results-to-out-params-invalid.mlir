// RUN: hkt-opt %s --split-input-file --hkt-results-to-out-params --verify-diagnostics
// What hkt-results-to-out-params refuses.

// A public function with callers: the calls would need the result's sizes
// (a private one is inlined instead).
// expected-error @+1 {{returns a memref of dynamic shape and has callers: only entries (functions nothing calls) get out-parameters for such results}}
func.func @callee(%x: memref<?xf32>) -> memref<?xf32> {
  return %x : memref<?xf32>
}
func.func @caller(%x: memref<?xf32>) -> memref<?xf32> {
  %y = func.call @callee(%x) : (memref<?xf32>) -> memref<?xf32>
  return %y : memref<?xf32>
}

// -----

// Results must be buffers already.
// expected-error @+1 {{result #1 has type 'tensor<f32>'; out-parameters are memrefs (bufferize first)}}
func.func @tensor(%x: memref<?xf32>, %t: tensor<f32>) -> (memref<?xf32>, tensor<f32>) {
  return %x, %t : memref<?xf32>, tensor<f32>
}
