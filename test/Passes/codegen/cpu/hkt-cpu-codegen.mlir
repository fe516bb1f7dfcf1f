// RUN: hkt-opt %s --hkt-cpu-codegen=vector-bits=256 | FileCheck %s
// RUN: hkt-opt %s --hkt-cpu-codegen=vector-bits=512 | FileCheck %s --check-prefix=AVX512
// RUN: hkt-opt %s --hkt-cpu-codegen="vector-bits=512 register-rows=12 register-vectors=1" | FileCheck %s --check-prefix=REG

// A whole matmul (a projection): threads over 64-row blocks, column panels
// of 16 (two AVX2 vectors); in each panel rows 0-59 in 6-row register tiles
// (12 accumulators), rows 60-63 in one 4-row tile; each accumulator carried
// in registers across K in steps of 4 outer products.
// CHECK-LABEL: func.func @projection
// CHECK: scf.forall (%[[T:.+]]) in (2)
// CHECK: scf.for %[[N:.+]] = %{{.+}} to %{{.+}} step %c16
// CHECK-NEXT: scf.for %[[M:.+]] = %{{.+}} to %c60 step %c6
// CHECK: %[[ACC:.+]] = vector.transfer_read %{{.+}}[%{{.+}}, %[[N]]]{{.*}} : memref<128x32xf32>, vector<6x16xf32>
// CHECK-NEXT: %[[R:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c4 iter_args(%{{.+}} = %[[ACC]]) -> (vector<6x16xf32>)
// CHECK: vector.transfer_read {{.*}} : memref<128x64xf32>, vector<6x4xf32>
// CHECK: vector.transfer_read {{.*}} : memref<64x32xf32>, vector<4x16xf32>
// CHECK-COUNT-24: vector.fma {{.*}} : vector<16xf32>
// CHECK: scf.yield %{{.+}} : vector<6x16xf32>
// CHECK: vector.transfer_write %[[R]], {{.*}} : vector<6x16xf32>, memref<128x32xf32>
// CHECK: scf.for %[[N2:.+]] = %{{.+}} to %{{.+}} step %c16
// CHECK: %[[ACC2:.+]] = vector.transfer_read %{{.+}}[%{{.+}}, %[[N2]]]{{.*}} : memref<128x32xf32>, vector<4x16xf32>
// CHECK-NEXT: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c4 iter_args(%{{.+}} = %[[ACC2]]) -> (vector<4x16xf32>)
// CHECK-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: linalg.matmul
// With AVX-512: 8 rows x 32 columns.
// AVX512-LABEL: func.func @projection
// AVX512: scf.forall (%{{.+}}) in (2)
// AVX512: iter_args(%{{.+}} = %{{.+}}) -> (vector<8x32xf32>)
// AVX512-COUNT-32: vector.fma {{.*}} : vector<32xf32>
// The register tile the options give instead of the table's (hkt-compile
// --register-tile 12x1): 12 rows x one vector, rows 0-59 in 12-row tiles,
// 60-63 in one 4-row tile.
// REG-LABEL: func.func @projection
// REG: scf.for %{{.+}} = %{{.+}} to %c60 step %c12
// REG: iter_args(%{{.+}} = %{{.+}}) -> (vector<12x16xf32>)
// REG-COUNT-48: vector.fma {{.*}} : vector<16xf32>
// REG: iter_args(%{{.+}} = %{{.+}}) -> (vector<4x16xf32>)
func.func @projection(%a: memref<128x64xf32>, %b: memref<64x32xf32>, %c: memref<128x32xf32>) {
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x32xf32>) outs(%c : memref<128x32xf32>)
  return
}

// Ops inside a loop nest (attention tiles): the matmul gets register tiles
// only (no threads; 8 rows: two 4-row tiles rather than 6 + 2); a 3-D op read along its innermost loop is vectorised
// one row at a time, with exp as a polynomial (no expf call); a 3-D
// broadcast along the innermost loop is left as it is.
// CHECK-LABEL: func.func @tile_ops
// CHECK-NOT: scf.forall
// CHECK: iter_args(%{{.+}} = %{{.+}}) -> (vector<4x16xf32>)
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %c1
// CHECK: vector.load {{.*}} : memref<16xf32>, vector<16xf32>
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %c1
// CHECK: vector.transfer_read %{{.+}}[%[[I]], %[[J]], %{{.+}}]{{.*}} : memref<4x8x16xf32>, vector<1x1x16xf32>
// CHECK-NOT: math.exp
// CHECK: math.floor
// CHECK: vector.transfer_write {{.*}} : vector<1x1x16xf32>, memref<4x8x16xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.+}} : memref<4x8xf32>) outs(%{{.+}} : memref<4x8x16xf32>)
// Row sums are reassociated (a tree of vector adds, not a chain of scalar
// ones); row maxima are halved by compare and select (x86's vmaxps) down to
// one lane, combined with the carried maximum the same way.
// CHECK: vector.reduction <add>, %{{.+}}, %{{.+}} fastmath<reassoc> : vector<16xf32> into f32
// CHECK-NOT: vector.reduction <maximumf>
// CHECK: %[[LO8:.+]] = vector.extract_strided_slice %[[ROW:.+]] {offsets = [0], sizes = [8], strides = [1]} : vector<16xf32> to vector<8xf32>
// CHECK-NEXT: %[[HI8:.+]] = vector.extract_strided_slice %[[ROW]] {offsets = [8], sizes = [8], strides = [1]} : vector<16xf32> to vector<8xf32>
// CHECK-NEXT: %[[GT8:.+]] = arith.cmpf ogt, %[[LO8]], %[[HI8]] : vector<8xf32>
// CHECK-NEXT: %[[M8:.+]] = arith.select %[[GT8]], %[[LO8]], %[[HI8]] : vector<8xi1>, vector<8xf32>
// CHECK-COUNT-3: arith.select %{{.+}}, %{{.+}}, %{{.+}} : vector<{{[421]}}xi1>, vector<{{[421]}}xf32>
// CHECK-NEXT: %[[M1:.+]] = vector.extract %{{.+}}[0] : f32 from vector<1xf32>
// CHECK-NEXT: %[[GT:.+]] = arith.cmpf ogt, %[[M1]], %[[ACC:.+]] : f32
// CHECK-NEXT: arith.select %[[GT]], %[[M1]], %[[ACC]] : f32
// CHECK-NOT: vector.reduction <maximumf>
func.func @tile_ops(%s: memref<4x8x16xf32>, %row: memref<16xf32>, %odd: memref<4x8xf32>, %a: memref<8x8xf32>, %b: memref<8x16xf32>, %c: memref<8x16xf32>, %p: memref<8x16xf32>, %sums: memref<8xf32>, %maxs: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x16xf32>) outs(%c : memref<8x16xf32>)
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%row : memref<16xf32>) outs(%s : memref<4x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %e = math.exp %in : f32
      %r = arith.addf %out, %e : f32
      linalg.yield %r : f32
    }
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%odd : memref<4x8xf32>) outs(%s : memref<4x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    }
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%p : memref<8x16xf32>) outs(%sums : memref<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.addf %out, %in : f32
      linalg.yield %r : f32
    }
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%p : memref<8x16xf32>) outs(%maxs : memref<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %out, %in : f32
      linalg.yield %r : f32
    }
  }
  return
}

// Ops outside the loop nests are split across threads along their first
// parallel loop of at least 64 iterations, into 16 equal parts (8, 4 or 2
// when 16 does not divide it). Elementwise ops (rows contiguous in every
// operand) are then vectorised row by row; transposes keep their scalar
// body; ops with no loop long enough are left alone.
// CHECK-LABEL: func.func @outside
// CHECK: scf.forall (%{{.+}}) in (16)
// CHECK-NEXT: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c1
// CHECK: vector.transfer_read {{.*}} : memref<128x32xf32>, vector<1x32xf32>
// CHECK-NEXT: arith.mulf %{{.+}}, %{{.+}} : vector<1x32xf32>
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<1x32xf32>, memref<128x32xf32>
// CHECK: scf.forall (%{{.+}}) in (8)
// CHECK: linalg.transpose ins(%{{.+}} : memref<9x16xf32{{.*}}>) outs(%{{.+}} : memref<16x9xf32{{.*}}>)
// CHECK-NOT: scf.forall
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : memref<63x5xf32>)
func.func @outside(%a: memref<128x32xf32>, %b: memref<128x32xf32>, %t: memref<72x16xf32>, %u: memref<16x72xf32>, %small: memref<63x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : memref<128x32xf32>) outs(%b : memref<128x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %in : f32
    linalg.yield %r : f32
  }
  linalg.transpose ins(%t : memref<72x16xf32>) outs(%u : memref<16x72xf32>) permutation = [1, 0]
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%small : memref<63x5xf32>)
  return
}

// An elementwise op that reads a reshaped view (the model's GELU over the
// expanded feed-forward matmul): split across threads but not vectorised by
// rows, whose vector patterns loop forever on it in MLIR 22 (hkt-compile
// --model hung from max_len 64 on).
// CHECK-LABEL: func.func @reshaped_view
// CHECK: memref.expand_shape
// CHECK: scf.forall
// CHECK-NOT: vector.
// CHECK: linalg.generic {{.*}} ins(%{{.+}} : memref<1x4x256xf32, strided<[16384, 256, 1], offset: ?>>)
// CHECK-NOT: vector.
// CHECK: return
func.func @reshaped_view(%a: memref<64x256xf32>, %out: memref<1x64x256xf32>) {
  %v = memref.expand_shape %a [[0, 1], [2]] output_shape [1, 64, 256] : memref<64x256xf32> into memref<1x64x256xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%v : memref<1x64x256xf32>) outs(%out : memref<1x64x256xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  return
}

// A right operand whose rows lie 1 KiB apart (256 floats) is copied, before
// the matmul reads it, into column panels as wide as a register tile's row
// of vectors (16 floats with AVX2's 6 x 2 tile: 16 panels of 64 x 16, each
// contiguous), in thread blocks of rows, one panel-wide vector at a time;
// the register tiles read their panel, and the copy is freed after the
// matmul. One whose rows are 128 bytes apart is not copied.
// CHECK-LABEL: func.func @padded_rows
// CHECK: %[[P:.+]] = memref.alloc() {alignment = 64 : i64} : memref<16x64x16xf32>
// CHECK: scf.forall
// CHECK: %[[ROWS:.+]] = memref.subview %{{.+}}[%[[FIRST:.+]], 0] [4, 256] [1, 1] : memref<64x256xf32> to memref<4x256xf32, strided<[256, 1], offset: ?>>
// CHECK: scf.for %[[I:.+]] = %c0 to %c4 step %c1
// CHECK: %[[ROW:.+]] = arith.addi %[[FIRST]], %[[I]]
// CHECK: scf.for %[[J:.+]] = %c0 to %c16 step %c1
// CHECK: %[[COL:.+]] = arith.muli %[[J]], %c16
// CHECK: %[[V:.+]] = vector.transfer_read %[[ROWS]][%[[I]], %[[COL]]], %{{.+}} {in_bounds = [true]} : memref<4x256xf32, strided<[256, 1], offset: ?>>, vector<16xf32>
// CHECK: vector.transfer_write %[[V]], %[[P]][%[[J]], %[[ROW]], %c0] {in_bounds = [true]} : vector<16xf32>, memref<16x64x16xf32>
// CHECK: scf.forall
// CHECK: %[[PANEL:.+]] = arith.divui %[[C:.+]], %c16
// CHECK: %[[IN:.+]] = arith.remui %[[C]], %c16
// CHECK: vector.transfer_read %[[P]][%[[PANEL]], %{{.+}}, %[[IN]]], %{{.+}} {in_bounds = [true, true]} : memref<16x64x16xf32>, vector<4x16xf32>
// CHECK-NOT: memref<64x256xf32>
// CHECK: memref.dealloc %[[P]] : memref<16x64x16xf32>
// CHECK-LABEL: func.func @unpadded_rows
// CHECK-NOT: memref.alloc
// CHECK: return
func.func @padded_rows(%a: memref<256x64xf32>, %b: memref<64x256xf32>, %c: memref<256x256xf32>) {
  linalg.matmul ins(%a, %b : memref<256x64xf32>, memref<64x256xf32>) outs(%c : memref<256x256xf32>)
  return
}
func.func @unpadded_rows(%a: memref<256x64xf32>, %b: memref<64x32xf32>, %c: memref<256x32xf32>) {
  linalg.matmul ins(%a, %b : memref<256x64xf32>, memref<64x32xf32>) outs(%c : memref<256x32xf32>)
  return
}

// Dynamic rows: the remainder rows' matmul (fewer than a register tile's)
// reads its panel as a K x 16 view.
// CHECK-LABEL: func.func @dynamic_rows_panels
// CHECK: %[[P:.+]] = memref.alloc() {alignment = 64 : i64} : memref<16x64x16xf32>
// CHECK: vector.transfer_write %{{.+}}, %[[P]]
// CHECK: %[[VIEW:.+]] = memref.subview %[[P]][%{{.+}}, 0, %{{.+}}] [1, 64, 16] [1, 1, 1] : memref<16x64x16xf32> to memref<64x16xf32, strided<[16, 1], offset: ?>>
// CHECK: vector.transfer_read %[[P]]
// CHECK: linalg.matmul ins(%{{.+}}, %[[VIEW]] : memref<?x64xf32, strided<[64, 1], offset: ?>>, memref<64x16xf32, strided<[16, 1], offset: ?>>)
// CHECK: memref.dealloc %[[P]]
func.func @dynamic_rows_panels(%a: memref<?x64xf32>, %b: memref<64x256xf32>, %c: memref<?x256xf32>) {
  linalg.matmul ins(%a, %b : memref<?x64xf32>, memref<64x256xf32>) outs(%c : memref<?x256xf32>)
  return
}

// A dynamic sequence length. A matmul with dynamic rows (a projection):
// blocks of 60 rows (whole 6-row register tiles) over the threads; in each
// column panel the register tiles' row loop is peeled: whole tiles are
// vectorised as a static matmul's, the rest (< 6 rows) stays a matmul.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK: scf.forall (%{{.+}}) in (%{{.+}})
// CHECK: scf.for
// CHECK: vector.transfer_read {{.*}} : memref<?x32xf32>, vector<6x16xf32>
// CHECK: iter_args(%{{.+}} = %{{.+}}) -> (vector<6x16xf32>)
// CHECK-COUNT-24: vector.fma {{.*}} : vector<16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<6x16xf32>, memref<?x32xf32>
// CHECK: linalg.matmul ins({{.*}} : memref<?x64xf32, strided<[64, 1], offset: ?>>, memref<64x16xf32, strided<[32, 1], offset: ?>>)
func.func @dynamic_rows(%a: memref<?x64xf32>, %b: memref<64x32xf32>, %c: memref<?x32xf32>) {
  linalg.matmul ins(%a, %b : memref<?x64xf32>, memref<64x32xf32>) outs(%c : memref<?x32xf32>)
  return
}

// A matmul with a dynamic reduction (a weight gradient summed over the
// sequence): the cache tiles' K loop is peeled; whole cache tiles take the
// static register tiles (K in steps of 4), the last one steps of 1.
// CHECK-LABEL: func.func @dynamic_reduction
// CHECK: scf.forall (%{{.+}}) in (2)
// CHECK: iter_args(%{{.+}} = %{{.+}}) -> (vector<6x16xf32>)
// CHECK: vector.transfer_read {{.*}} : memref<128x?xf32>, vector<6x4xf32>
// CHECK: iter_args(%{{.+}} = %{{.+}}) -> (vector<4x16xf32>)
// CHECK: vector.transfer_read {{.*}} : memref<128x?xf32>, vector<6x1xf32>
// CHECK: vector.transfer_read {{.*}} : memref<128x?xf32>, vector<4x1xf32>
// CHECK-NOT: linalg.matmul
func.func @dynamic_reduction(%a: memref<128x?xf32>, %b: memref<?x32xf32>, %c: memref<128x32xf32>) {
  linalg.matmul ins(%a, %b : memref<128x?xf32>, memref<?x32xf32>) outs(%c : memref<128x32xf32>)
  return
}

// An elementwise op outside the loop nests with a dynamic sequence: split
// across threads in blocks of 64 rows of the sequence, vectorised row by
// row.
// CHECK-LABEL: func.func @dynamic_rows_split
// CHECK: scf.forall (%{{.+}}) in (%{{.+}})
// CHECK: vector.transfer_read {{.*}} : memref<2x?x64xf32>, vector<1x1x64xf32>
// CHECK-NOT: linalg.generic
#dyn_id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @dynamic_rows_split(%a: memref<2x?x64xf32>, %c: memref<2x?x64xf32>) {
  linalg.generic {indexing_maps = [#dyn_id, #dyn_id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : memref<2x?x64xf32>) outs(%c : memref<2x?x64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  }
  return
}
