// RUN: hkt-opt %s --split-input-file \
// RUN:   --transform-preload-library=transform-library-paths=%S/../../../../passes/codegen/cpu/recipes/cpu-codegen.mlir \
// RUN:   --transform-interpreter | FileCheck %s

// The recipe library of hkt-cpu-codegen (passes/codegen/cpu/recipes/cpu-codegen.mlir),
// one named sequence at a time, driven by a sequence of the test with its
// tile sizes as params (those the pass gives for AVX2, vector-bits=256).
// The library's sequences are declared here and defined by the preloaded
// file.

// @hkt_gemm: threads over 64-row blocks, cache tiles [N 32, K 64], 4 x 16
// register tiles in steps of K 4, column panels outside rows; then
// @hkt_lower_vectors: the accumulator carried across K, outer products.
// CHECK-LABEL: func.func @gemm
// CHECK: scf.forall (%{{.+}}) in (2)
// CHECK: scf.for %[[N:.+]] = %{{.+}} to %{{.+}} step %c16
// CHECK-NEXT: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c4
// CHECK: %[[ACC:.+]] = vector.transfer_read %{{.+}}[%{{.+}}, %[[N]]]{{.*}} : memref<128x32xf32>, vector<4x16xf32>
// CHECK-NEXT: %[[R:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c4 iter_args(%{{.+}} = %[[ACC]]) -> (vector<4x16xf32>)
// CHECK-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// CHECK: vector.transfer_write %[[R]], {{.*}} : vector<4x16xf32>, memref<128x32xf32>
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @gemm(%a: memref<128x64xf32>, %b: memref<64x32xf32>, %c: memref<128x32xf32>) {
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x32xf32>) outs(%c : memref<128x32xf32>)
  return
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @hkt_gemm(
      %mm: !transform.any_op {transform.consumed},
      %rows: !transform.param<i64> {transform.readonly},
      %cacheN: !transform.param<i64> {transform.readonly},
      %cacheK: !transform.param<i64> {transform.readonly},
      %regM: !transform.param<i64> {transform.readonly},
      %regN: !transform.param<i64> {transform.readonly},
      %regK: !transform.param<i64> {transform.readonly})
  transform.named_sequence @hkt_prepare_vectors(
      %funcs: !transform.any_op {transform.readonly})
  transform.named_sequence @hkt_lower_vectors(
      %funcs: !transform.any_op {transform.consumed})
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mm = transform.structured.match ops{["linalg.matmul"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %rows = transform.param.constant 64 : i64 -> !transform.param<i64>
    %cacheN = transform.param.constant 32 : i64 -> !transform.param<i64>
    %cacheK = transform.param.constant 64 : i64 -> !transform.param<i64>
    %regM = transform.param.constant 4 : i64 -> !transform.param<i64>
    %regN = transform.param.constant 16 : i64 -> !transform.param<i64>
    %regK = transform.param.constant 4 : i64 -> !transform.param<i64>
    transform.include @hkt_gemm failures(propagate)
        (%mm, %rows, %cacheN, %cacheK, %regM, %regN, %regK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> ()
    %funcs = transform.structured.match ops{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.include @hkt_prepare_vectors failures(propagate) (%funcs)
        : (!transform.any_op) -> ()
    transform.include @hkt_lower_vectors failures(propagate) (%funcs)
        : (!transform.any_op) -> ()
    transform.yield
  }
}

// -----

// @hkt_tile_gemm: a matmul in a loop nest gets register tiles only (no
// threads, no cache tiles), rows outside columns.
// CHECK-LABEL: func.func @tile_gemm
// CHECK-NOT: scf.forall
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c4
// CHECK-NEXT: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c16
// CHECK: iter_args(%{{.+}} = %{{.+}}) -> (vector<4x16xf32>)
// CHECK-COUNT-8: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @tile_gemm(%a: memref<8x8xf32>, %b: memref<8x32xf32>, %c: memref<8x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x32xf32>) outs(%c : memref<8x32xf32>)
  }
  return
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @hkt_tile_gemm(
      %mm: !transform.any_op {transform.consumed},
      %regM: !transform.param<i64> {transform.readonly},
      %regN: !transform.param<i64> {transform.readonly},
      %regK: !transform.param<i64> {transform.readonly})
  transform.named_sequence @hkt_prepare_vectors(
      %funcs: !transform.any_op {transform.readonly})
  transform.named_sequence @hkt_lower_vectors(
      %funcs: !transform.any_op {transform.consumed})
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mm = transform.structured.match ops{["linalg.matmul"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %regM = transform.param.constant 4 : i64 -> !transform.param<i64>
    %regN = transform.param.constant 16 : i64 -> !transform.param<i64>
    %regK = transform.param.constant 4 : i64 -> !transform.param<i64>
    transform.include @hkt_tile_gemm failures(propagate) (%mm, %regM, %regN, %regK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> ()
    %funcs = transform.structured.match ops{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.include @hkt_prepare_vectors failures(propagate) (%funcs)
        : (!transform.any_op) -> ()
    transform.include @hkt_lower_vectors failures(propagate) (%funcs)
        : (!transform.any_op) -> ()
    transform.yield
  }
}

// -----

// @hkt_rows_3d with a whole row (0) and @hkt_whole: a 3-D elementwise op
// one row at a time, a 1-D op vectorised as it is.
// CHECK-LABEL: func.func @rows
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %c1
// CHECK-NEXT: scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %c1
// CHECK-NEXT: %[[X:.+]] = vector.transfer_read %{{.+}}[%[[I]], %[[J]], %{{.+}}]{{.*}} : memref<4x8x16xf32>, vector<1x1x16xf32>
// CHECK-NEXT: %[[Y:.+]] = arith.mulf %[[X]], %[[X]] : vector<1x1x16xf32>
// CHECK-NEXT: vector.transfer_write %[[Y]], {{.*}} : vector<1x1x16xf32>, memref<4x8x16xf32>
// CHECK: %[[V:.+]] = vector.load {{.*}} : memref<16xf32>, vector<16xf32>
// CHECK-NEXT: arith.addf %[[V]], %[[V]] : vector<16xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @rows(%a: memref<4x8x16xf32>, %b: memref<4x8x16xf32>, %r: memref<16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : memref<4x8x16xf32>) outs(%b : memref<4x8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%r : memref<16xf32>) {
  ^bb0(%out: f32):
    %s = arith.addf %out, %out : f32
    linalg.yield %s : f32
  }
  return
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @hkt_rows_3d(
      %op: !transform.any_op {transform.consumed},
      %inner: !transform.param<i64> {transform.readonly})
  transform.named_sequence @hkt_whole(
      %op: !transform.any_op {transform.consumed})
  transform.named_sequence @hkt_prepare_vectors(
      %funcs: !transform.any_op {transform.readonly})
  transform.named_sequence @hkt_lower_vectors(
      %funcs: !transform.any_op {transform.consumed})
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %ops = transform.structured.match ops{["linalg.generic"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %op3, %op1 = transform.split_handle %ops
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %whole = transform.param.constant 0 : i64 -> !transform.param<i64>
    transform.include @hkt_rows_3d failures(propagate) (%op3, %whole)
        : (!transform.any_op, !transform.param<i64>) -> ()
    transform.include @hkt_whole failures(propagate) (%op1)
        : (!transform.any_op) -> ()
    %funcs = transform.structured.match ops{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.include @hkt_prepare_vectors failures(propagate) (%funcs)
        : (!transform.any_op) -> ()
    transform.include @hkt_lower_vectors failures(propagate) (%funcs)
        : (!transform.any_op) -> ()
    transform.yield
  }
}

// -----

// @hkt_split then @hkt_rows_2d: an op outside the loop nests split across
// threads into 16 parts of 8 rows (the packed param [8, 0]), then
// vectorised row by row in pieces of 16.
// CHECK-LABEL: func.func @split
// CHECK: scf.forall (%{{.+}}) in (16)
// CHECK-NEXT: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c1
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c16
// CHECK-NEXT: %[[X:.+]] = vector.transfer_read {{.*}} : memref<128x32xf32>, vector<1x16xf32>
// CHECK-NEXT: %[[Y:.+]] = arith.mulf %[[X]], %[[X]] : vector<1x16xf32>
// CHECK-NEXT: vector.transfer_write %[[Y]], {{.*}} : vector<1x16xf32>, memref<128x32xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @split(%a: memref<128x32xf32>, %b: memref<128x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : memref<128x32xf32>) outs(%b : memref<128x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %in : f32
    linalg.yield %r : f32
  }
  return
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @hkt_split(
      %op: !transform.any_op {transform.consumed},
      %threads: !transform.param<i64> {transform.readonly})
      -> !transform.any_op
  transform.named_sequence @hkt_rows_2d(
      %op: !transform.any_op {transform.consumed},
      %inner: !transform.param<i64> {transform.readonly})
  transform.named_sequence @hkt_prepare_vectors(
      %funcs: !transform.any_op {transform.readonly})
  transform.named_sequence @hkt_lower_vectors(
      %funcs: !transform.any_op {transform.consumed})
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["linalg.generic"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %rows = transform.param.constant 8 : i64 -> !transform.param<i64>
    %none = transform.param.constant 0 : i64 -> !transform.param<i64>
    %threads = transform.merge_handles %rows, %none : !transform.param<i64>
    %part = transform.include @hkt_split failures(propagate) (%op, %threads)
        : (!transform.any_op, !transform.param<i64>) -> !transform.any_op
    %inner = transform.param.constant 16 : i64 -> !transform.param<i64>
    transform.include @hkt_rows_2d failures(propagate) (%part, %inner)
        : (!transform.any_op, !transform.param<i64>) -> ()
    %funcs = transform.structured.match ops{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.include @hkt_prepare_vectors failures(propagate) (%funcs)
        : (!transform.any_op) -> ()
    transform.include @hkt_lower_vectors failures(propagate) (%funcs)
        : (!transform.any_op) -> ()
    transform.yield
  }
}

// -----

// @hkt_gemm_split: 64-row blocks whose rows are not a multiple of the
// register tile's: rows 0-59 in 6 x 16 tiles, 60-63 in 4 x 16 ones, each
// accumulator carried across K.
// CHECK-LABEL: func.func @gemm_split
// CHECK: scf.forall (%{{.+}}) in (2)
// CHECK: scf.for %{{.+}} = %c0 to %c60 step %c6
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %{{.+}}) -> (vector<6x16xf32>)
// CHECK-COUNT-24: vector.fma {{.*}} : vector<16xf32>
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %{{.+}}) -> (vector<4x16xf32>)
// CHECK-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @gemm_split(%a: memref<128x64xf32>, %b: memref<64x32xf32>, %c: memref<128x32xf32>) {
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x32xf32>) outs(%c : memref<128x32xf32>)
  return
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @hkt_gemm_split(%mm: !transform.any_op {transform.consumed}, %rows: !transform.param<i64> {transform.readonly}, %cacheN: !transform.param<i64> {transform.readonly}, %cacheK: !transform.param<i64> {transform.readonly}, %regM: !transform.param<i64> {transform.readonly}, %regN: !transform.param<i64> {transform.readonly}, %regK: !transform.param<i64> {transform.readonly}, %split: !transform.param<i64> {transform.readonly}, %regM2: !transform.param<i64> {transform.readonly})
  transform.named_sequence @hkt_prepare_vectors(%funcs: !transform.any_op {transform.readonly})
  transform.named_sequence @hkt_lower_vectors(%funcs: !transform.any_op {transform.consumed})
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mm = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    %rows = transform.param.constant 64 : i64 -> !transform.param<i64>
    %cacheN = transform.param.constant 32 : i64 -> !transform.param<i64>
    %cacheK = transform.param.constant 64 : i64 -> !transform.param<i64>
    %regM = transform.param.constant 6 : i64 -> !transform.param<i64>
    %regN = transform.param.constant 16 : i64 -> !transform.param<i64>
    %regK = transform.param.constant 4 : i64 -> !transform.param<i64>
    %split = transform.param.constant 60 : i64 -> !transform.param<i64>
    %regM2 = transform.param.constant 4 : i64 -> !transform.param<i64>
    transform.include @hkt_gemm_split failures(propagate) (%mm, %rows, %cacheN, %cacheK, %regM, %regN, %regK, %split, %regM2) : (!transform.any_op, !transform.param<i64>, !transform.param<i64>, !transform.param<i64>, !transform.param<i64>, !transform.param<i64>, !transform.param<i64>, !transform.param<i64>, !transform.param<i64>) -> ()
    %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.include @hkt_prepare_vectors failures(propagate) (%funcs) : (!transform.any_op) -> ()
    transform.include @hkt_lower_vectors failures(propagate) (%funcs) : (!transform.any_op) -> ()
    transform.yield
  }
}
