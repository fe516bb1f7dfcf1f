// RUN: hkt-opt %s --split-input-file --hkt-lower-online-attention | FileCheck %s --check-prefix=DEFAULT
// RUN: hkt-opt %s --split-input-file --hkt-lower-online-attention="tile-q=16 tile-k=32" | FileCheck %s --check-prefix=TILE
// RUN: hkt-opt %s --split-input-file --hkt-lower-online-attention="tile-q=6 tile-k=10" | FileCheck %s --check-prefix=ROUND
// RUN: not hkt-opt %s --split-input-file --hkt-lower-online-attention="tile-q=0" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not hkt-opt %s --split-input-file --hkt-lower-online-attention="tile-k=0" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: tile-q and tile-k must be >= 1

// Two levels (factors 1, 2), causal, key lengths; B = 2, T = 100, D = 8, H = 2
// (head width 4).
//
// Default tiles (64 x 64): T is padded to 128, two query tiles; the level-1
// block is 32 x 32, broadcast 2 x 2.
// DEFAULT-LABEL: func.func @causal_lengths
// DEFAULT-SAME: (%[[Q0:[^:]+]]: tensor<2x100x8xf32>, %[[Q1:[^:]+]]: tensor<2x50x8xf32>, %[[K0:[^:]+]]: tensor<2x100x8xf32>, %[[K1:[^:]+]]: tensor<2x50x8xf32>, %[[V:[^:]+]]: tensor<2x100x8xf32>, %[[LENS:[^:]+]]: tensor<2xi32>, %[[A:[^:]+]]: tensor<2x100x8xf32>, %[[M:[^:]+]]: tensor<2x2x100xf32>, %[[S:[^:]+]]: tensor<2x2x100xf32>)
// DEFAULT: tensor.pad %[[Q0]] low[0, 0, 0] high[0, 28, 0]
// DEFAULT: } : tensor<2x100x8xf32> to tensor<2x128x8xf32>
// DEFAULT: tensor.pad %[[K0]] low[0, 0, 0] high[0, 28, 0]
// DEFAULT: linalg.transpose ins(%{{.+}} : tensor<2x128x8xf32>) outs(%{{.+}} : tensor<2x8x128xf32>) permutation = [0, 2, 1]
// DEFAULT: tensor.pad %[[Q1]] low[0, 0, 0] high[0, 14, 0]
// DEFAULT: } : tensor<2x50x8xf32> to tensor<2x64x8xf32>
// DEFAULT: tensor.pad %[[K1]] low[0, 0, 0] high[0, 14, 0]
// DEFAULT: linalg.transpose ins(%{{.+}} : tensor<2x64x8xf32>) outs(%{{.+}} : tensor<2x8x64xf32>) permutation = [0, 2, 1]
// DEFAULT: tensor.pad %[[V]] low[0, 0, 0] high[0, 28, 0]
// DEFAULT: scf.forall (%[[B:[^,]+]], %[[H:[^,]+]], %[[QT:[^)]+]]) in (2, 2, 2) shared_outs({{.*}}) -> (tensor<2x128x8xf32>, tensor<2x2x128xf32>, tensor<2x2x128xf32>)
// DEFAULT: %[[C64:.+]] = arith.constant 64 : index
// DEFAULT-NEXT: %[[I0:.+]] = arith.muli %[[QT]], %[[C64]] : index
// DEFAULT: tensor.extract_slice {{.*}} [1, 64, 4] [1, 1, 1] : tensor<2x128x8xf32> to tensor<64x4xf32>
// DEFAULT: tensor.extract_slice {{.*}} [1, 32, 4] [1, 1, 1] : tensor<2x64x8xf32> to tensor<32x4xf32>
// DEFAULT: tensor.extract %[[LENS]][%[[B]]] : tensor<2xi32>
// DEFAULT: %[[C64B:.+]] = arith.constant 64 : index
// DEFAULT-NEXT: %[[END:.+]] = arith.addi %[[I0]], %[[C64B]] : index
// DEFAULT: scf.for {{.*}} -> (tensor<64x4xf32>, tensor<64xf32>, tensor<64xf32>)
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<64x4xf32>, tensor<4x64xf32>) outs(%{{.+}} : tensor<64x64xf32>)
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<32x4xf32>, tensor<4x32xf32>) outs(%{{.+}} : tensor<32x32xf32>)
// DEFAULT: tensor.expand_shape %{{.+}} {{\[\[}}0, 1], [2, 3]] output_shape [32, 2, 32, 2] : tensor<64x64xf32> into tensor<32x2x32x2xf32>
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<64x64xf32>, tensor<64x4xf32>) outs(%{{.+}} : tensor<64x4xf32>)
// DEFAULT: tensor.parallel_insert_slice {{.*}} [1, 64, 4] [1, 1, 1] : tensor<64x4xf32> into tensor<2x128x8xf32>
// DEFAULT: tensor.extract_slice %{{.+}}#0[0, 0, 0] [2, 100, 8] [1, 1, 1] : tensor<2x128x8xf32> to tensor<2x100x8xf32>
//
// Tiles 16 x 32: queries padded to 112 (seven tiles), keys to 128 (and
// transposed once to B x D x T_l); the level-1 block is 8 x 16, broadcast
// 2 x 2 into the 16 x 32 scores.
// TILE-DAG: #[[$COARSE:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2)>
// TILE-DAG: #[[$FINE:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// TILE-LABEL: func.func @causal_lengths
// TILE-SAME: (%[[Q0:[^:]+]]: tensor<2x100x8xf32>, %[[Q1:[^:]+]]: tensor<2x50x8xf32>, %[[K0:[^:]+]]: tensor<2x100x8xf32>, %[[K1:[^:]+]]: tensor<2x50x8xf32>, %[[V:[^:]+]]: tensor<2x100x8xf32>, %[[LENS:[^:]+]]: tensor<2xi32>, %[[A:[^:]+]]: tensor<2x100x8xf32>, %[[M:[^:]+]]: tensor<2x2x100xf32>, %[[S:[^:]+]]: tensor<2x2x100xf32>)
// TILE-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// TILE-DAG: %[[LOWEST:.+]] = arith.constant -3.40282347E+38 : f32
//   Zero padding to whole tiles (the running max is padded with the lowest value).
// TILE: %[[PQ0:.+]] = tensor.pad %[[Q0]] low[0, 0, 0] high[0, 12, 0]
// TILE-NEXT: ^bb0
// TILE-NEXT: tensor.yield %[[ZERO]] : f32
// TILE-NEXT: } : tensor<2x100x8xf32> to tensor<2x112x8xf32>
// TILE: %[[PK0:.+]] = tensor.pad %[[K0]] low[0, 0, 0] high[0, 28, 0]
// TILE: } : tensor<2x100x8xf32> to tensor<2x128x8xf32>
// TILE: %[[KT0:.+]] = linalg.transpose ins(%[[PK0]] : tensor<2x128x8xf32>) outs(%{{.+}} : tensor<2x8x128xf32>) permutation = [0, 2, 1]
// TILE: %[[PQ1:.+]] = tensor.pad %[[Q1]] low[0, 0, 0] high[0, 6, 0]
// TILE: } : tensor<2x50x8xf32> to tensor<2x56x8xf32>
// TILE: %[[PK1:.+]] = tensor.pad %[[K1]] low[0, 0, 0] high[0, 14, 0]
// TILE: } : tensor<2x50x8xf32> to tensor<2x64x8xf32>
// TILE: %[[KT1:.+]] = linalg.transpose ins(%[[PK1]] : tensor<2x64x8xf32>) outs(%{{.+}} : tensor<2x8x64xf32>) permutation = [0, 2, 1]
// TILE: %[[PV:.+]] = tensor.pad %[[V]] low[0, 0, 0] high[0, 28, 0]
// TILE: } : tensor<2x100x8xf32> to tensor<2x128x8xf32>
// TILE: %[[PA:.+]] = tensor.pad %[[A]] low[0, 0, 0] high[0, 12, 0]
// TILE: } : tensor<2x100x8xf32> to tensor<2x112x8xf32>
// TILE: %[[PM:.+]] = tensor.pad %[[M]] low[0, 0, 0] high[0, 0, 12]
// TILE-NEXT: ^bb0
// TILE-NEXT: tensor.yield %[[LOWEST]] : f32
// TILE-NEXT: } : tensor<2x2x100xf32> to tensor<2x2x112xf32>
// TILE: %[[PS:.+]] = tensor.pad %[[S]] low[0, 0, 0] high[0, 0, 12]
// TILE: } : tensor<2x2x100xf32> to tensor<2x2x112xf32>
//   Parallel over (batch, head, query tile).
// TILE: %[[R:.+]]:3 = scf.forall (%[[B:[^,]+]], %[[H:[^,]+]], %[[QT:[^)]+]]) in (2, 2, 7) shared_outs(%[[AO:[^ ]+]] = %[[PA]], %[[MO:[^ ]+]] = %[[PM]], %[[SO:[^ ]+]] = %[[PS]]) -> (tensor<2x112x8xf32>, tensor<2x2x112xf32>, tensor<2x2x112xf32>)
// TILE: %[[C16:.+]] = arith.constant 16 : index
// TILE-NEXT: %[[I0:.+]] = arith.muli %[[QT]], %[[C16]] : index
// TILE: %[[C4:.+]] = arith.constant 4 : index
// TILE-NEXT: %[[COL0:.+]] = arith.muli %[[H]], %[[C4]] : index
// TILE: %[[QTILE0:.+]] = tensor.extract_slice %[[PQ0]][%[[B]], %{{.+}}, %[[COL0]]] [1, 16, 4] [1, 1, 1] : tensor<2x112x8xf32> to tensor<16x4xf32>
// TILE: %[[C2:.+]] = arith.constant 2 : index
// TILE-NEXT: %[[ROW1:.+]] = arith.divui %[[I0]], %[[C2]] : index
// TILE-NEXT: %[[QTILE1:.+]] = tensor.extract_slice %[[PQ1]][%[[B]], %[[ROW1]], %[[COL0]]] [1, 8, 4] [1, 1, 1] : tensor<2x56x8xf32> to tensor<8x4xf32>
// TILE: %[[ACCT:.+]] = tensor.extract_slice %[[AO]][%[[B]], %[[I0]], %[[COL0]]] [1, 16, 4] [1, 1, 1] : tensor<2x112x8xf32> to tensor<16x4xf32>
// TILE: %[[MAXT:.+]] = tensor.extract_slice %[[MO]][%[[B]], %[[H]], %[[I0]]] [1, 1, 16] [1, 1, 1] : tensor<2x2x112xf32> to tensor<16xf32>
// TILE: %[[SUMT:.+]] = tensor.extract_slice %[[SO]][%[[B]], %[[H]], %[[I0]]] [1, 1, 16] [1, 1, 1] : tensor<2x2x112xf32> to tensor<16xf32>
//   Key tiles: up to the row's key length (at most T) and, causal, up to the end of the query tile.
// TILE: %[[C100:.+]] = arith.constant 100 : index
// TILE: %[[LEN:.+]] = tensor.extract %[[LENS]][%[[B]]] : tensor<2xi32>
// TILE: %[[LENI:.+]] = arith.index_cast %[[LEN]] : i32 to index
// TILE: %[[KLEN:.+]] = arith.minui %[[LENI]], %[[C100]] : index
// TILE: %[[C16B:.+]] = arith.constant 16 : index
// TILE-NEXT: %[[QEND:.+]] = arith.addi %[[I0]], %[[C16B]] : index
// TILE-NEXT: %[[KEND:.+]] = arith.minui %[[KLEN]], %[[QEND]] : index
// TILE: %[[C32:.+]] = arith.constant 32 : index
// TILE-NEXT: %[[NT:.+]] = arith.ceildivui %[[KEND]], %[[C32]] : index
// TILE: %[[LOOP:.+]]:3 = scf.for %[[KT:[^ ]+]] = %{{.+}} to %[[NT]] step %{{.+}} iter_args(%[[ACCI:[^ ]+]] = %[[ACCT]], %[[MAXI:[^ ]+]] = %[[MAXT]], %[[SUMI:[^ ]+]] = %[[SUMT]]) -> (tensor<16x4xf32>, tensor<16xf32>, tensor<16xf32>)
// TILE: %[[J0:.+]] = arith.muli %[[KT]], %{{.+}} : index
//   Level 0: a 16 x 32 block of q0 k0^T.
// TILE: %[[Z0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<16x32xf32>)
// TILE: %[[KTILE0:.+]] = tensor.extract_slice %[[KT0]][%[[B]], %[[COL0]], %{{.+}}] [1, 4, 32] [1, 1, 1] : tensor<2x8x128xf32> to tensor<4x32xf32>
// TILE: %[[S0:.+]] = linalg.matmul ins(%[[QTILE0]], %[[KTILE0]] : tensor<16x4xf32>, tensor<4x32xf32>) outs(%[[Z0]] : tensor<16x32xf32>)
//   Level 1: an 8 x 16 block at half resolution, added to every 2 x 2 sub-block.
// TILE: %[[KROW1:.+]] = arith.divui %[[J0]], %{{.+}} : index
// TILE-NEXT: %[[KTILE1:.+]] = tensor.extract_slice %[[KT1]][%[[B]], %[[COL0]], %[[KROW1]]] [1, 4, 16] [1, 1, 1] : tensor<2x8x64xf32> to tensor<4x16xf32>
// TILE: %[[Z1:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<8x16xf32>)
// TILE: %[[S1:.+]] = linalg.matmul ins(%[[QTILE1]], %[[KTILE1]] : tensor<8x4xf32>, tensor<4x16xf32>) outs(%[[Z1]] : tensor<8x16xf32>)
// TILE: %[[BLOCKS:.+]] = tensor.expand_shape %[[S0]] {{\[\[}}0, 1], [2, 3]] output_shape [8, 2, 16, 2] : tensor<16x32xf32> into tensor<8x2x16x2xf32>
// TILE: %[[ADDED:.+]] = linalg.generic {indexing_maps = [#[[$COARSE]], #[[$FINE]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[S1]] : tensor<8x16xf32>) outs(%[[BLOCKS]] : tensor<8x2x16x2xf32>)
// TILE-NEXT: ^bb0(%[[IN:.+]]: f32, %[[OUT:.+]]: f32):
// TILE-NEXT: %[[SUM1:.+]] = arith.addf %[[OUT]], %[[IN]] : f32
// TILE-NEXT: linalg.yield %[[SUM1]] : f32
// TILE: %[[SCORES:.+]] = tensor.collapse_shape %[[ADDED]] {{\[\[}}0, 1], [2, 3]] : tensor<8x2x16x2xf32> into tensor<16x32xf32>
//   Masks: -inf past the key length (padding included) and above the diagonal.
// TILE: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// TILE: %[[MASKED:.+]] = linalg.generic {{.*}} outs(%[[SCORES]] : tensor<16x32xf32>)
// TILE: %[[II:.+]] = linalg.index 0 : index
// TILE-NEXT: %[[ROW:.+]] = arith.addi %[[I0]], %[[II]] : index
// TILE-NEXT: %[[JJ:.+]] = linalg.index 1 : index
// TILE-NEXT: %[[COL:.+]] = arith.addi %[[J0]], %[[JJ]] : index
// TILE-NEXT: %[[PAST:.+]] = arith.cmpi uge, %[[COL]], %[[KLEN]] : index
// TILE-NEXT: %[[AHEAD:.+]] = arith.cmpi ugt, %[[COL]], %[[ROW]] : index
// TILE-NEXT: %[[DROP:.+]] = arith.ori %[[PAST]], %[[AHEAD]] : i1
// TILE-NEXT: arith.select %[[DROP]], %[[NEGINF]], %{{.+}} : f32
//   Online softmax: m' = max(m, max_j S), P = exp(S - m'), corr = exp(m - m'),
//   sum' = sum * corr + sum_j P, acc' = acc * corr + P V.
// TILE: %[[MCOPY:.+]] = linalg.copy ins(%[[MAXI]] : tensor<16xf32>)
// TILE: %[[NEWMAX:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[MASKED]] : tensor<16x32xf32>) outs(%[[MCOPY]] : tensor<16xf32>)
// TILE: arith.maximumf
// TILE: %[[P:.+]] = linalg.generic {{.*}} ins(%[[NEWMAX]] : tensor<16xf32>) outs(%[[MASKED]] : tensor<16x32xf32>)
// TILE-NEXT: ^bb0(%[[MV:.+]]: f32, %[[SV:.+]]: f32):
// TILE-NEXT: %[[D:.+]] = arith.subf %[[SV]], %[[MV]] : f32
// TILE-NEXT: math.exp %[[D]] : f32
// TILE: %[[CORR:.+]] = linalg.generic {{.*}} ins(%[[MAXI]], %[[NEWMAX]] : tensor<16xf32>, tensor<16xf32>)
// TILE-NEXT: ^bb0(%[[OLD:.+]]: f32, %[[NEW:.+]]: f32, %{{.+}}: f32):
// TILE-NEXT: %[[DM:.+]] = arith.subf %[[OLD]], %[[NEW]] : f32
// TILE-NEXT: math.exp %[[DM]] : f32
// TILE: %[[SSUM:.+]] = linalg.generic {{.*}} ins(%[[CORR]] : tensor<16xf32>) outs(%[[SUMI]] : tensor<16xf32>)
// TILE: arith.mulf
// TILE: %[[NSUM:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<16x32xf32>) outs(%[[SSUM]] : tensor<16xf32>)
// TILE: arith.addf
// TILE: %[[SACC:.+]] = linalg.generic {{.*}} ins(%[[CORR]] : tensor<16xf32>) outs(%[[ACCI]] : tensor<16x4xf32>)
// TILE: arith.mulf
// TILE: %[[VTILE:.+]] = tensor.extract_slice %[[PV]][%[[B]], %[[J0]], %[[COL0]]] [1, 32, 4] [1, 1, 1] : tensor<2x128x8xf32> to tensor<32x4xf32>
// TILE: %[[NACC:.+]] = linalg.matmul ins(%[[P]], %[[VTILE]] : tensor<16x32xf32>, tensor<32x4xf32>) outs(%[[SACC]] : tensor<16x4xf32>)
// TILE: %[[NMAX:.+]] = linalg.copy ins(%[[NEWMAX]] : tensor<16xf32>) outs(%[[MAXI]] : tensor<16xf32>)
// TILE: scf.yield %[[NACC]], %[[NMAX]], %[[NSUM]] : tensor<16x4xf32>, tensor<16xf32>, tensor<16xf32>
// TILE: scf.forall.in_parallel
// TILE-NEXT: tensor.parallel_insert_slice %[[LOOP]]#0 into %[[AO]][%[[B]], %[[I0]], %[[COL0]]] [1, 16, 4] [1, 1, 1] : tensor<16x4xf32> into tensor<2x112x8xf32>
// TILE-NEXT: tensor.parallel_insert_slice %[[LOOP]]#1 into %[[MO]][%[[B]], %[[H]], %[[I0]]] [1, 1, 16] [1, 1, 1] : tensor<16xf32> into tensor<2x2x112xf32>
// TILE-NEXT: tensor.parallel_insert_slice %[[LOOP]]#2 into %[[SO]][%[[B]], %[[H]], %[[I0]]] [1, 1, 16] [1, 1, 1] : tensor<16xf32> into tensor<2x2x112xf32>
//   The padded query rows are dropped.
// TILE: %[[RA:.+]] = tensor.extract_slice %[[R]]#0[0, 0, 0] [2, 100, 8] [1, 1, 1] : tensor<2x112x8xf32> to tensor<2x100x8xf32>
// TILE: %[[RM:.+]] = tensor.extract_slice %[[R]]#1[0, 0, 0] [2, 2, 100] [1, 1, 1] : tensor<2x2x112xf32> to tensor<2x2x100xf32>
// TILE: %[[RS:.+]] = tensor.extract_slice %[[R]]#2[0, 0, 0] [2, 2, 100] [1, 1, 1] : tensor<2x2x112xf32> to tensor<2x2x100xf32>
// TILE: return %[[RA]], %[[RM]], %[[RS]]
// TILE-NOT: hkt.online_attention
func.func @causal_lengths(%q0: tensor<2x100x8xf32>, %q1: tensor<2x50x8xf32>, %k0: tensor<2x100x8xf32>, %k1: tensor<2x50x8xf32>, %v: tensor<2x100x8xf32>, %len: tensor<2xi32>, %a: tensor<2x100x8xf32>, %m: tensor<2x2x100xf32>, %s: tensor<2x2x100xf32>) -> (tensor<2x100x8xf32>, tensor<2x2x100xf32>, tensor<2x2x100xf32>) {
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<2x100x8xf32>, tensor<2x50x8xf32>) keys(%k0, %k1 : tensor<2x100x8xf32>, tensor<2x50x8xf32>) values(%v : tensor<2x100x8xf32>) lengths(%len : tensor<2xi32>) outs(%a, %m, %s : tensor<2x100x8xf32>, tensor<2x2x100xf32>, tensor<2x2x100xf32>) {causal = true, factors = array<i64: 1, 2>} -> tensor<2x100x8xf32>, tensor<2x2x100xf32>, tensor<2x2x100xf32>
  return %acc, %max, %sum : tensor<2x100x8xf32>, tensor<2x2x100xf32>, tensor<2x2x100xf32>
}

// -----

// One level, not causal, no key lengths, Tq = 24 != Tk = 40: every key tile
// up to Tk is visited, only padding is masked.
// Default tiles shrink to the sequences (24 x 40): nothing to pad.
// DEFAULT-LABEL: func.func @cross
// DEFAULT-NOT: tensor.pad
// DEFAULT: scf.forall ({{.*}}) in (1, 1, 1)
// DEFAULT: %[[C40:.+]] = arith.constant 40 : index
// DEFAULT-NEXT: %[[C40B:.+]] = arith.constant 40 : index
// DEFAULT-NEXT: %[[NT:.+]] = arith.ceildivui %[[C40]], %[[C40B]] : index
// DEFAULT: scf.for %{{.+}} = %{{.+}} to %[[NT]] step
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<24x4xf32>, tensor<4x40xf32>) outs(%{{.+}} : tensor<24x40xf32>)
// DEFAULT-NOT: tensor.expand_shape
// DEFAULT: return
// Tiles 16 x 32: both sequences padded, two query tiles, two key tiles.
// TILE-LABEL: func.func @cross
// TILE-SAME: (%[[Q:[^:]+]]: tensor<1x24x4xf32>, %[[K:[^:]+]]: tensor<1x40x4xf32>
// TILE: tensor.pad %[[Q]] low[0, 0, 0] high[0, 8, 0]
// TILE: } : tensor<1x24x4xf32> to tensor<1x32x4xf32>
// TILE: tensor.pad %[[K]] low[0, 0, 0] high[0, 24, 0]
// TILE: } : tensor<1x40x4xf32> to tensor<1x64x4xf32>
// TILE: scf.forall ({{.*}}) in (1, 1, 2)
// TILE-NOT: tensor.extract %
// TILE-NOT: arith.minui
// TILE: %[[C40:.+]] = arith.constant 40 : index
// TILE: %[[C32:.+]] = arith.constant 32 : index
// TILE-NEXT: %[[NT:.+]] = arith.ceildivui %[[C40]], %[[C32]] : index
// TILE: scf.for %{{.+}} = %{{.+}} to %[[NT]] step
// TILE: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<16x4xf32>, tensor<4x32xf32>) outs(%{{.+}} : tensor<16x32xf32>)
// TILE: arith.cmpi uge
// TILE-NOT: arith.cmpi ugt
// TILE: arith.select
// TILE: math.exp
// TILE: return
func.func @cross(%q: tensor<1x24x4xf32>, %k: tensor<1x40x4xf32>, %v: tensor<1x40x4xf32>, %a: tensor<1x24x4xf32>, %m: tensor<1x1x24xf32>, %s: tensor<1x1x24xf32>) -> (tensor<1x24x4xf32>, tensor<1x1x24xf32>, tensor<1x1x24xf32>) {
  %acc, %max, %sum = hkt.online_attention ins(%q : tensor<1x24x4xf32>) keys(%k : tensor<1x40x4xf32>) values(%v : tensor<1x40x4xf32>) outs(%a, %m, %s : tensor<1x24x4xf32>, tensor<1x1x24xf32>, tensor<1x1x24xf32>) {factors = array<i64: 1>} -> tensor<1x24x4xf32>, tensor<1x1x24xf32>, tensor<1x1x24xf32>
  return %acc, %max, %sum : tensor<1x24x4xf32>, tensor<1x1x24xf32>, tensor<1x1x24xf32>
}

// -----

// Factors 1, 4 (T = 20): tiles are rounded up to whole coarse blocks, so
// tile-q = 6 becomes 8 and tile-k = 10 becomes 12 (T padded to 24).
// ROUND-LABEL: func.func @round_tiles
// ROUND: scf.forall ({{.*}}) in (1, 1, 3)
// ROUND: tensor.extract_slice {{.*}} [1, 8, 4] [1, 1, 1] : tensor<1x24x4xf32> to tensor<8x4xf32>
// ROUND: tensor.extract_slice {{.*}} [1, 2, 4] [1, 1, 1] : tensor<1x6x4xf32> to tensor<2x4xf32>
// ROUND: scf.for {{.*}} -> (tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>)
// ROUND: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<8x4xf32>, tensor<4x12xf32>) outs(%{{.+}} : tensor<8x12xf32>)
// ROUND: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<2x4xf32>, tensor<4x3xf32>) outs(%{{.+}} : tensor<2x3xf32>)
// ROUND: tensor.expand_shape %{{.+}} {{\[\[}}0, 1], [2, 3]] output_shape [2, 4, 3, 4] : tensor<8x12xf32> into tensor<2x4x3x4xf32>
// ROUND: return
// Default tiles: 20 is already a multiple of 4, one tile each way.
// DEFAULT-LABEL: func.func @round_tiles
// DEFAULT-NOT: tensor.pad
// DEFAULT: scf.forall ({{.*}}) in (1, 1, 1)
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<20x4xf32>, tensor<4x20xf32>) outs(%{{.+}} : tensor<20x20xf32>)
// DEFAULT: tensor.expand_shape %{{.+}} {{\[\[}}0, 1], [2, 3]] output_shape [5, 4, 5, 4] : tensor<20x20xf32> into tensor<5x4x5x4xf32>
func.func @round_tiles(%q0: tensor<1x20x4xf32>, %q1: tensor<1x5x4xf32>, %k0: tensor<1x20x4xf32>, %k1: tensor<1x5x4xf32>, %v: tensor<1x20x4xf32>, %a: tensor<1x20x4xf32>, %m: tensor<1x1x20xf32>, %s: tensor<1x1x20xf32>) -> tensor<1x20x4xf32> {
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<1x20x4xf32>, tensor<1x5x4xf32>) keys(%k0, %k1 : tensor<1x20x4xf32>, tensor<1x5x4xf32>) values(%v : tensor<1x20x4xf32>) outs(%a, %m, %s : tensor<1x20x4xf32>, tensor<1x1x20xf32>, tensor<1x1x20xf32>) {causal = true, factors = array<i64: 1, 4>} -> tensor<1x20x4xf32>, tensor<1x1x20xf32>, tensor<1x1x20xf32>
  return %acc : tensor<1x20x4xf32>
}
