// RUN: hkt-opt %s --hkt-nvvm-host-loops-in-order --verify-diagnostics

// A forall mapped to GPU threads is not the host's.
func.func @mapped(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{with a device mapping cannot run on the host}}
  %r = scf.forall (%i) in (4) shared_outs(%x = %a) -> (tensor<4xf32>) {
    %s = tensor.extract_slice %x[%i] [1] [1] : tensor<4xf32> to tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %x[%i] [1] [1] : tensor<1xf32> into tensor<4xf32>
    }
  } {mapping = [#gpu.thread<x>]}
  return %r : tensor<4xf32>
}
