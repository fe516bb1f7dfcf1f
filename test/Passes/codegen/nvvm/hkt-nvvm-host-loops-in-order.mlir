// RUN: hkt-opt %s --split-input-file --hkt-nvvm-host-loops-in-order | FileCheck %s

// A batched entry's rows (the shape buildBatchedEntry gives logits): the
// forall over the rows becomes an scf.for carrying the stacked result, each
// row's parallel_insert_slice an insert_slice into the running value.
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[X:.+]]: tensor<?x4xf32>)
// CHECK: %[[B:.+]] = tensor.dim %[[X]]
// CHECK: %[[E:.+]] = tensor.empty(%[[B]])
// CHECK: %[[R:.+]] = scf.for %[[I:.+]] = %{{.+}} to %[[B]] step %{{.+}} iter_args(%[[ACC:.+]] = %[[E]]) -> (tensor<?x4xf32>)
// CHECK: %[[ROW:.+]] = tensor.extract_slice %[[X]][%[[I]], 0] [1, 4] [1, 1]
// CHECK: %[[EXP:.+]] = math.exp %[[ROW]]
// CHECK: %[[NEXT:.+]] = tensor.insert_slice %[[EXP]] into %[[ACC]][%[[I]], 0] [1, 4] [1, 1]
// CHECK: scf.yield %[[NEXT]]
// CHECK-NOT: scf.forall
// CHECK: return %[[R]]
func.func @rows(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %x, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%b) : tensor<?x4xf32>
  %r = scf.forall (%i) in (%b) shared_outs(%acc = %e) -> (tensor<?x4xf32>) {
    %row = tensor.extract_slice %x[%i, 0] [1, 4] [1, 1] : tensor<?x4xf32> to tensor<1x4xf32>
    %y = math.exp %row : tensor<1x4xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %y into %acc[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<?x4xf32>
    }
  }
  return %r : tensor<?x4xf32>
}

// -----

// Two shared outputs over a 2-d forall (a loop nest, the outer dimension
// outside), and a forall nested in the body: converted too.
// CHECK-LABEL: func.func @nest
// CHECK: %[[R:.+]]:2 = scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[A0:.+]] = %{{.+}}, %[[B0:.+]] = %{{.+}})
// CHECK:   %[[S:.+]]:2 = scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[A1:.+]] = %[[A0]], %[[B1:.+]] = %[[B0]])
// CHECK:     scf.for
// CHECK:     tensor.insert_slice %{{.+}} into %[[A1]][%[[I]], %[[J]]]
// CHECK:     tensor.insert_slice %{{.+}} into %[[B1]][%[[J]], %[[I]]]
// CHECK:     scf.yield
// CHECK:   scf.yield %[[S]]#0, %[[S]]#1
// CHECK-NOT: scf.forall
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @nest(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>, %v: tensor<4xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
  %r:2 = scf.forall (%i, %j) in (2, 3) shared_outs(%x = %a, %y = %b) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
    %w = scf.forall (%k) in (4) shared_outs(%z = %v) -> (tensor<4xf32>) {
      %one = tensor.extract_slice %z[%k] [1] [1] : tensor<4xf32> to tensor<1xf32>
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %one into %z[%k] [1] [1] : tensor<1xf32> into tensor<4xf32>
      }
    }
    %s = tensor.extract_slice %w[0] [1] [1] : tensor<4xf32> to tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %x[%i, %j] [1, 1] [1, 1] : tensor<1xf32> into tensor<2x3xf32>
      tensor.parallel_insert_slice %s into %y[%j, %i] [1, 1] [1, 1] : tensor<1xf32> into tensor<3x2xf32>
    }
  }
  return %r#0, %r#1 : tensor<2x3xf32>, tensor<3x2xf32>
}
