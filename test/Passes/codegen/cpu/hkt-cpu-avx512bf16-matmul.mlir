// RUN: hkt-opt %s --split-input-file --hkt-cpu-avx512bf16-matmul --canonicalize --cse | FileCheck %s

// Matmuls in a parallel loop (attention tiles): the operands rounded as
// hkt-cpu-amx-matmul rounds them (here once, whole, before the loop: rows
// for the left operand, pairs for the right one), then register tiles of
// 8 rows x 2 vectors of 16 columns: 16 accumulators loaded from C, carried
// through the loop over K's 32 pairs (a row's pair broadcast as one 32-bit
// word, 16 column pairs of the right operand loaded, one vdpbf16ps per
// accumulator), stored once.
// CHECK-LABEL: func.func @tile
// CHECK: %[[AR:.+]] = memref.alloc() : memref<4x64x64xbf16>
// CHECK: arith.truncf %{{.+}} : vector<16xf32> to vector<16xbf16>
// CHECK: %[[BR:.+]] = memref.alloc() : memref<32x128xbf16>
// CHECK: vector.interleave %{{.+}}, %{{.+}} : vector<16xbf16> -> vector<32xbf16>
// CHECK: scf.forall (%[[T:.+]]) in (4)
// CHECK-NOT: arith.truncf
// CHECK: %[[AV:.+]] = memref.subview %[[AR]][%[[T]], 0, 0] [1, 64, 64] [1, 1, 1]
// CHECK: scf.for %[[I:.+]] = %c0 to %c64 step %c8
// CHECK-NEXT: scf.for %[[J:.+]] = %c0 to %c64 step %c32
// CHECK-COUNT-16: vector.load %{{.+}} : memref<64x64xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
// CHECK: %[[R:.+]]:16 = scf.for %[[P:.+]] = %c0 to %c32 step %c1 iter_args
// CHECK-COUNT-2: vector.load %{{.+}}[%[[P]], %{{.+}}] : memref<32x128xbf16{{.*}}>, vector<32xbf16>
// CHECK: %[[PAIR:.+]] = vector.load %[[AV]][%[[I]], %{{.+}}] : memref<64x64xbf16, strided<[64, 1], offset: ?>>, vector<2xbf16>
// CHECK-NEXT: %[[WORD:.+]] = vector.bitcast %[[PAIR]] : vector<2xbf16> to vector<1xi32>
// CHECK-NEXT: %[[SCALAR:.+]] = vector.extract %[[WORD]][0] : i32 from vector<1xi32>
// CHECK-NEXT: %[[SPLAT:.+]] = vector.broadcast %[[SCALAR]] : i32 to vector<16xi32>
// CHECK-NEXT: %[[LHS:.+]] = vector.bitcast %[[SPLAT]] : vector<16xi32> to vector<32xbf16>
// CHECK-NEXT: x86vector.avx512.dot %{{.+}}, %[[LHS]], %{{.+}} : vector<32xbf16> -> vector<16xf32>
// CHECK-NEXT: x86vector.avx512.dot %{{.+}}, %[[LHS]], %{{.+}} : vector<32xbf16> -> vector<16xf32>
// CHECK-COUNT-14: x86vector.avx512.dot
// CHECK: scf.yield
// CHECK-COUNT-16: vector.store %[[R]]#{{[0-9]+}}
// CHECK: memref.dealloc %[[BR]]
// CHECK: memref.dealloc %[[AR]]
// CHECK-NOT: linalg.matmul
// CHECK-NOT: amx.
func.func @tile(%a: memref<4x64x64xf32>, %b: memref<64x64xf32>, %c: memref<4x64x64xf32>) {
  scf.forall (%t) in (4) {
    %at = memref.subview %a[%t, 0, 0] [1, 64, 64] [1, 1, 1] : memref<4x64x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
    %ct = memref.subview %c[%t, 0, 0] [1, 64, 64] [1, 1, 1] : memref<4x64x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
    linalg.matmul ins(%at, %b : memref<64x64xf32, strided<[64, 1], offset: ?>>, memref<64x64xf32>)
                  outs(%ct : memref<64x64xf32, strided<[64, 1], offset: ?>>)
  }
  return
}

// -----

// A whole matmul (a projection) with K = 1040: no
// chunks (AMX would refuse a K above 512 that is not a multiple of 512),
// padded to 1056 (whole steps of 32) with zero pair rows; 64-row blocks in
// parallel, each rounding its own rows.
// CHECK-LABEL: func.func @projection
// CHECK: %[[B16:.+]] = memref.alloc() : memref<528x256xbf16>
// CHECK: vector.interleave
// CHECK: scf.forall (%{{.+}}) in (4)
// CHECK-NEXT: memref.alloca() : memref<64x1056xbf16>
// CHECK: scf.for %{{.+}} = %c0 to %c528 step %c1 iter_args
// CHECK-COUNT-16: x86vector.avx512.dot
// CHECK-NOT: x86vector.avx512.dot
// CHECK: memref.dealloc %[[B16]]
func.func @projection(%a: memref<256x1040xf32>, %b: memref<1040x128xf32>, %c: memref<256x128xf32>) {
  linalg.matmul ins(%a, %b : memref<256x1040xf32>, memref<1040x128xf32>)
                outs(%c : memref<256x128xf32>)
  return
}

// -----

// N = 16: one vector of columns (the column loop's one step folded away),
// 8 accumulators (M = 48, 8 rows a tile), K = 32 in 16 pairs.
// CHECK-LABEL: func.func @narrow
// CHECK: scf.for %{{.+}} = %c0 to %c48 step %c8
// CHECK-NOT: scf.for
// CHECK: %{{.+}}:8 = scf.for %{{.+}} = %c0 to %c16 step %c1 iter_args
// CHECK-COUNT-1: vector.load %{{.+}} : memref<16x32xbf16{{.*}}>, vector<32xbf16>
// CHECK-COUNT-8: x86vector.avx512.dot
// CHECK-NEXT: scf.yield
func.func @narrow(%a: memref<48x32xf32>, %b: memref<32x16xf32>, %c: memref<48x16xf32>) {
  scf.forall (%t) in (2) {
    linalg.matmul ins(%a, %b : memref<48x32xf32>, memref<32x16xf32>)
                  outs(%c : memref<48x16xf32>)
  }
  return
}

// -----

// Left as they are (f32), as by hkt-cpu-amx-matmul: rows not a multiple of
// 16 in a parallel loop, a transposed operand, K not a multiple of 16, K
// known at run time only, f64, tensors.
// CHECK-LABEL: func.func @unchanged
// CHECK-COUNT-6: linalg.matmul
// CHECK-NOT: x86vector
func.func @unchanged(%b: memref<64x64xf32>, %a8: memref<8x64xf32>, %c8: memref<8x64xf32>,
                     %a: memref<64x64xf32>, %c: memref<64x64xf32>,
                     %k8: memref<64x8xf32>, %b8: memref<8x64xf32>,
                     %dk: memref<64x?xf32>, %kd: memref<?x64xf32>,
                     %f: memref<64x64xf64>, %t: tensor<64x64xf32>) -> tensor<64x64xf32> {
  scf.forall (%i) in (2) {
    linalg.matmul ins(%a8, %b : memref<8x64xf32>, memref<64x64xf32>) outs(%c8 : memref<8x64xf32>)
  }
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
                ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  linalg.matmul ins(%k8, %b8 : memref<64x8xf32>, memref<8x64xf32>) outs(%c : memref<64x64xf32>)
  linalg.matmul ins(%dk, %kd : memref<64x?xf32>, memref<?x64xf32>) outs(%c : memref<64x64xf32>)
  linalg.matmul ins(%f, %f : memref<64x64xf64>, memref<64x64xf64>) outs(%f : memref<64x64xf64>)
  %r = linalg.matmul ins(%t, %t : tensor<64x64xf32>, tensor<64x64xf32>) outs(%t : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// -----

// C zero-filled just before the matmul: the accumulators start as zero
// vectors, nothing loads C, the fill goes; a fill of 1.0 stays, C loaded.
// CHECK-LABEL: func.func @from_zero
// CHECK-DAG: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %[[ZERO]], {{.+}} = %[[ZERO]]
// CHECK: linalg.fill
// CHECK-COUNT-16: vector.load %{{.+}} : memref<64x64xf32>, vector<16xf32>
// CHECK: scf.for {{.+}} iter_args
func.func @from_zero(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %c: memref<2x64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  scf.forall (%t) in (2) {
    %s = memref.alloca() : memref<64x64xf32>
    linalg.fill ins(%zero : f32) outs(%s : memref<64x64xf32>)
    linalg.matmul ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%s : memref<64x64xf32>)
    %ones = memref.alloca() : memref<64x64xf32>
    linalg.fill ins(%one : f32) outs(%ones : memref<64x64xf32>)
    linalg.matmul ins(%s, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%ones : memref<64x64xf32>)
    %ct = memref.subview %c[%t, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
    memref.copy %ones, %ct : memref<64x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
  }
  return
}
