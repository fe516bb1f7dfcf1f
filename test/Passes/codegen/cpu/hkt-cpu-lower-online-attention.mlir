// RUN: hkt-opt %s --split-input-file --hkt-cpu-lower-online-attention | FileCheck %s --check-prefix=DEFAULT
// RUN: hkt-opt %s --split-input-file --hkt-cpu-lower-online-attention="tile-q=16 tile-k=32" | FileCheck %s --check-prefix=TILE
// RUN: hkt-opt %s --split-input-file --hkt-cpu-lower-online-attention="tile-q=6 tile-k=10" | FileCheck %s --check-prefix=ROUND
// RUN: not hkt-opt %s --split-input-file --hkt-cpu-lower-online-attention="tile-q=0" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not hkt-opt %s --split-input-file --hkt-cpu-lower-online-attention="tile-k=0" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: tile-q and tile-k must be >= 1

// Two levels (factors 1, 2), causal, key lengths; B = 2, T = 100, D = 8, H = 2
// (head width 4).
//
// The loops are upstream tiling of the op (scf::tileUsingSCF through its
// TilingInterface): scf.forall over (batch, head, query tile), scf.for over
// key tiles carrying the running state. The pass pads to whole tiles, packs
// the operands head-major once (keys as B x H x tiles x d x keys-per-tile,
// reordered inside each tile: even offsets, then odd), splits the key loop
// into an unmasked and a masked part, and builds each tile from the packed
// operands (buildOnlineAttentionTile, the op's own per-tile algorithm).
//
// Default tiles (64 x 64): T is padded to 128, two query tiles.
// DEFAULT-LABEL: func.func @causal_lengths
// DEFAULT-SAME: (%[[Q0:[^:]+]]: tensor<2x100x8xf32>, %[[Q1:[^:]+]]: tensor<2x50x8xf32>, %[[K0:[^:]+]]: tensor<2x100x8xf32>, %[[K1:[^:]+]]: tensor<2x50x8xf32>, %[[V:[^:]+]]: tensor<2x100x8xf32>, %[[LENS:[^:]+]]: tensor<2xi32>, %[[A:[^:]+]]: tensor<2x100x8xf32>, %[[M:[^:]+]]: tensor<2x2x100xf32>, %[[S:[^:]+]]: tensor<2x2x100xf32>)
// DEFAULT: tensor.pad %[[Q0]] low[0, 0, 0] high[0, 28, 0]
// DEFAULT: } : tensor<2x100x8xf32> to tensor<2x128x8xf32>
//   Key lengths clamped to the real sequence (padded keys are masked).
// DEFAULT: %[[C100:.+]] = arith.constant 100 : i32
// DEFAULT: %[[KLENS:.+]] = linalg.generic {{.*}} ins(%[[LENS]] : tensor<2xi32>)
// DEFAULT: arith.minsi %{{.+}}, %[[C100]] : i32
// DEFAULT: linalg.transpose ins(%{{.+}} : tensor<2x1x128x2x4xf32>) outs(%{{.+}} : tensor<2x2x1x128x4xf32>) permutation = [0, 3, 1, 2, 4]
//   Key offset j = 2 c + r of a 64-key tile goes to position 32 r + c.
// DEFAULT: linalg.transpose ins(%{{.+}} : tensor<2x2x32x2x2x4xf32>) outs(%{{.+}} : tensor<2x2x2x4x2x32xf32>) permutation = [0, 4, 1, 5, 3, 2]
// DEFAULT: %[[PK0:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0], [1], [2], [3], [4, 5]] : tensor<2x2x2x4x2x32xf32> into tensor<2x2x2x4x64xf32>
// DEFAULT: linalg.transpose ins(%{{.+}} : tensor<2x2x32x2x4xf32>) outs(%{{.+}} : tensor<2x2x2x4x32xf32>) permutation = [0, 3, 1, 4, 2]
//   Values reordered like the level-0 keys.
// DEFAULT: linalg.transpose ins(%{{.+}} : tensor<2x2x32x2x2x4xf32>) outs(%{{.+}} : tensor<2x2x2x2x32x4xf32>) permutation = [0, 4, 1, 3, 2, 5]
// DEFAULT: %[[PV:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0], [1], [2, 3, 4], [5]] : tensor<2x2x2x2x32x4xf32> into tensor<2x2x128x4xf32>
// DEFAULT: scf.forall (%[[B:[^,]+]], %[[H:[^,]+]], %[[I0:[^)]+]]) = (0, 0, 0) to (2, 2, 128) step (1, 1, 64) shared_outs({{.*}}) -> (tensor<2x128x8xf32>, tensor<2x2x128xf32>, tensor<2x2x128xf32>)
//   The accumulator tile is carried in a contiguous buffer.
// DEFAULT: %[[ACC0:.+]] = linalg.copy ins(%{{.+}} : tensor<64x4xf32>) outs(%{{.+}} : tensor<64x4xf32>)
// DEFAULT: %[[ACCI:.+]] = tensor.expand_shape %[[ACC0]]
// DEFAULT: tensor.extract %[[KLENS]][%[[B]]] : tensor<2xi32>
// DEFAULT: scf.for %{{.+}} = %{{.+}} to %[[SPLIT:[^ ]+]] step %{{.+}} iter_args(%{{.+}} = %[[ACCI]], {{.*}}) -> (tensor<1x64x4xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>)
// DEFAULT: scf.for %[[J0:[^ ]+]] = %[[SPLIT]] to %{{.+}} step
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<32x4xf32>, tensor<4x32xf32>) outs(%{{.+}} : tensor<32x32xf32>)
// DEFAULT: scf.for %[[ROW:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.*}}) -> (tensor<64x64xf32>)
// DEFAULT: arith.divui %[[ROW]], %{{.+}} : index
// DEFAULT: linalg.copy ins(%{{.+}} : tensor<32xf32>) outs(%{{.+}} : tensor<32xf32>)
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<64x4xf32>, tensor<4x64xf32>) outs(%{{.+}} : tensor<64x64xf32>)
//   The mask reads each position's original key offset.
// DEFAULT: arith.constant dense<[0, 2, 4, {{.*}}, 62, 1, 3, {{.*}}, 61, 63]> : tensor<64xindex>
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<64x64xf32>, tensor<64x4xf32>) outs(%{{.+}} : tensor<64x4xf32>)
// DEFAULT: tensor.parallel_insert_slice {{.*}} [1, 64, 4] [1, 1, 1] : tensor<64x4xf32> into tensor<2x128x8xf32>
// DEFAULT: tensor.extract_slice %{{.+}}#0[0, 0, 0] [2, 100, 8] [1, 1, 1] : tensor<2x128x8xf32> to tensor<2x100x8xf32>
// DEFAULT-NOT: hkt.online_attention
//
// Tiles 16 x 32: queries padded to 112 (seven tiles), keys to 128; the
// level-1 block is 8 x 16, copied into the two 16-column halves of rows
// 2a and 2a + 1 of the 16 x 32 scores.
// TILE-DAG: #[[$ROWB:.+]] = affine_map<(d0, d1) -> (d1)>
// TILE-DAG: #[[$ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// TILE-LABEL: func.func @causal_lengths
// TILE-SAME: (%[[Q0:[^:]+]]: tensor<2x100x8xf32>, %[[Q1:[^:]+]]: tensor<2x50x8xf32>, %[[K0:[^:]+]]: tensor<2x100x8xf32>, %[[K1:[^:]+]]: tensor<2x50x8xf32>, %[[V:[^:]+]]: tensor<2x100x8xf32>, %[[LENS:[^:]+]]: tensor<2xi32>, %[[A:[^:]+]]: tensor<2x100x8xf32>, %[[M:[^:]+]]: tensor<2x2x100xf32>, %[[S:[^:]+]]: tensor<2x2x100xf32>)
// TILE-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
//   Zero padding to whole tiles (the running max is padded with the lowest
//   value), then packing.
// TILE: tensor.pad %[[Q0]] low[0, 0, 0] high[0, 12, 0]
// TILE-NEXT: ^bb0
// TILE-NEXT: tensor.yield %[[ZERO]] : f32
// TILE-NEXT: } : tensor<2x100x8xf32> to tensor<2x112x8xf32>
// TILE: tensor.pad %[[K0]] low[0, 0, 0] high[0, 28, 0]
// TILE: } : tensor<2x100x8xf32> to tensor<2x128x8xf32>
// TILE: %[[KLENS:.+]] = linalg.generic
// TILE: %[[PA:.+]] = tensor.pad %[[A]] low[0, 0, 0] high[0, 12, 0]
// TILE: %[[LOWEST:.+]] = arith.constant -3.40282347E+38 : f32
// TILE: %[[PM:.+]] = tensor.pad %[[M]] low[0, 0, 0] high[0, 0, 12]
// TILE-NEXT: ^bb0
// TILE-NEXT: tensor.yield %[[LOWEST]] : f32
// TILE-NEXT: } : tensor<2x2x100xf32> to tensor<2x2x112xf32>
// TILE: %[[PS:.+]] = tensor.pad %[[S]] low[0, 0, 0] high[0, 0, 12]
// TILE: %[[QP0:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0], [1], [2, 3], [4]] : tensor<2x2x1x112x4xf32> into tensor<2x2x112x4xf32>
// TILE: %[[KP0:.+]] = tensor.collapse_shape %{{.+}} : tensor<2x2x4x4x2x16xf32> into tensor<2x2x4x4x32xf32>
// TILE: %[[QP1:.+]] = tensor.collapse_shape %{{.+}} : tensor<2x2x1x56x4xf32> into tensor<2x2x56x4xf32>
// TILE: %[[KP1:.+]] = tensor.collapse_shape %{{.+}} : tensor<2x2x4x4x16xf32> into tensor<2x2x4x4x16xf32>
// TILE: %[[VP:.+]] = tensor.collapse_shape %{{.+}} : tensor<2x2x4x2x16x4xf32> into tensor<2x2x128x4xf32>
//   Parallel over (batch, head, query tile): upstream tiling by [1, 1, 16, 0].
// TILE: %[[R:.+]]:3 = scf.forall (%[[B:[^,]+]], %[[H:[^,]+]], %[[I0:[^)]+]]) = (0, 0, 0) to (2, 2, 112) step (1, 1, 16) shared_outs(%[[AO:[^ ]+]] = %[[PA]], %[[MO:[^ ]+]] = %[[PM]], %[[SO:[^ ]+]] = %[[PS]]) -> (tensor<2x112x8xf32>, tensor<2x2x112xf32>, tensor<2x2x112xf32>)
// TILE: %[[COL0:.+]] = affine.apply #{{.+}}()[%[[H]]]
// TILE: %[[ACCT:.+]] = tensor.extract_slice %[[AO]][%[[B]], %[[I0]], %[[COL0]]] [1, 16, 4] [1, 1, 1] : tensor<2x112x8xf32> to tensor<1x16x4xf32>
// TILE: %[[MAXT:.+]] = tensor.extract_slice %[[MO]][%[[B]], %[[H]], %[[I0]]] [1, 1, 16] [1, 1, 1] : tensor<2x2x112xf32> to tensor<1x1x16xf32>
// TILE: %[[SUMT:.+]] = tensor.extract_slice %[[SO]][%[[B]], %[[H]], %[[I0]]] [1, 1, 16] [1, 1, 1] : tensor<2x2x112xf32> to tensor<1x1x16xf32>
// TILE: %[[ACCR:.+]] = tensor.collapse_shape %[[ACCT]] {{\[\[}}0, 1], [2]] : tensor<1x16x4xf32> into tensor<16x4xf32>
// TILE: %[[ACCC:.+]] = linalg.copy ins(%[[ACCR]] : tensor<16x4xf32>) outs(%{{.+}} : tensor<16x4xf32>)
// TILE: %[[ACCI:.+]] = tensor.expand_shape %[[ACCC]]
//   Key tiles: up to the row's key length (clamped to T) and, causal, up to
//   the end of the query tile.
// TILE: %[[LEN:.+]] = tensor.extract %[[KLENS]][%[[B]]] : tensor<2xi32>
// TILE: %[[KLEN:.+]] = arith.index_cast %[[LEN]] : i32 to index
// TILE: %[[QEND:.+]] = arith.addi %[[I0]], %{{.+}} : index
// TILE-NEXT: %[[KEND:.+]] = arith.minsi %[[KLEN]], %[[QEND]] : index
// TILE: %[[NT:.+]] = arith.ceildivsi %[[KEND]], %{{.+}} : index
//   Tiles wholly inside the key length and below the diagonal need no mask:
//   min(len / 32, (i0 + 1) / 32) of them come first, in a loop of their own.
// TILE: %[[FULL_LEN:.+]] = arith.divsi %[[KLEN]], %{{.+}} : index
// TILE: %[[I0P1:.+]] = arith.addi %[[I0]], %{{.+}} : index
// TILE-NEXT: %[[FULL_DIAG:.+]] = arith.divsi %[[I0P1]], %{{.+}} : index
// TILE-NEXT: %[[FULL0:.+]] = arith.minsi %[[FULL_LEN]], %[[FULL_DIAG]] : index
// TILE-NEXT: %[[FULL:.+]] = arith.minsi %[[FULL0]], %[[NT]] : index
// TILE: %[[SPLIT:.+]] = arith.muli %[[FULL]], %{{.+}} : index
// TILE: %[[UPPER:.+]] = arith.muli %[[NT]], %{{.+}} : index
// TILE: %[[FIRST:.+]]:3 = scf.for %{{.+}} = %{{.+}} to %[[SPLIT]] step %{{.+}} iter_args(%{{.+}} = %[[ACCI]], %{{.+}} = %[[MAXT]], %{{.+}} = %[[SUMT]]) -> (tensor<1x16x4xf32>, tensor<1x1x16xf32>, tensor<1x1x16xf32>)
// TILE-NOT: 0xFF800000
// TILE: scf.yield
// TILE-NEXT: }
//   The remaining key tiles, masked.
// TILE: %[[LOOP:.+]]:3 = scf.for %[[J0:[^ ]+]] = %[[SPLIT]] to %[[UPPER]] step %{{.+}} iter_args(%[[ACCI3:[^ ]+]] = %[[FIRST]]#0, %[[MAXI3:[^ ]+]] = %[[FIRST]]#1, %[[SUMI3:[^ ]+]] = %[[FIRST]]#2) -> (tensor<1x16x4xf32>, tensor<1x1x16xf32>, tensor<1x1x16xf32>)
// TILE: %[[KT:.+]] = arith.divui %[[J0]], %{{.+}} : index
// TILE: %[[QTILE0:.+]] = tensor.extract_slice %[[QP0]][%[[B]], %[[H]], %{{.+}}, 0] [1, 1, 16, 4] [1, 1, 1, 1] : tensor<2x2x112x4xf32> to tensor<16x4xf32>
// TILE: %[[KTILE0:.+]] = tensor.extract_slice %[[KP0]][%[[B]], %[[H]], %[[KT]], 0, 0] [1, 1, 1, 4, 32] [1, 1, 1, 1, 1] : tensor<2x2x4x4x32xf32> to tensor<4x32xf32>
// TILE: %[[ROW1:.+]] = arith.divui %[[I0]], %{{.+}} : index
// TILE: %[[QTILE1:.+]] = tensor.extract_slice %[[QP1]][%[[B]], %[[H]], %[[ROW1]], 0] [1, 1, 8, 4] [1, 1, 1, 1] : tensor<2x2x56x4xf32> to tensor<8x4xf32>
// TILE: %[[KTILE1:.+]] = tensor.extract_slice %[[KP1]][%[[B]], %[[H]], %[[KT]], 0, 0] [1, 1, 1, 4, 16] [1, 1, 1, 1, 1] : tensor<2x2x4x4x16xf32> to tensor<4x16xf32>
// TILE: %[[VTILE:.+]] = tensor.extract_slice %[[VP]][%[[B]], %[[H]], %[[J0]], 0] [1, 1, 32, 4] [1, 1, 1, 1] : tensor<2x2x128x4xf32> to tensor<32x4xf32>
// TILE: %[[ACCI:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0, 1], [2]] : tensor<1x16x4xf32> into tensor<16x4xf32>
// TILE: %[[MAXI:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0, 1, 2]] : tensor<1x1x16xf32> into tensor<16xf32>
// TILE: %[[SUMI:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0, 1, 2]] : tensor<1x1x16xf32> into tensor<16xf32>
// TILE: %[[LENB:.+]] = tensor.extract %[[KLENS]][%[[B]]] : tensor<2xi32>
// TILE: %[[KLENB:.+]] = arith.index_cast %[[LENB]] : i32 to index
//   Level 1: an 8 x 16 block at half resolution.
// TILE: %[[Z1:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<8x16xf32>)
// TILE: %[[S1:.+]] = linalg.matmul ins(%[[QTILE1]], %[[KTILE1]] : tensor<8x4xf32>, tensor<4x16xf32>) outs(%[[Z1]] : tensor<8x16xf32>)
//   Broadcast: row r of the scores gets row r / 2 of the block in each half.
// TILE: %[[INIT:.+]] = scf.for %[[RR:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[RI:[^ ]+]] = %{{.+}}) -> (tensor<16x32xf32>)
// TILE: %[[A1:.+]] = arith.divui %[[RR]], %{{.+}} : index
// TILE-NEXT: %[[SEG:.+]] = tensor.extract_slice %[[S1]][%[[A1]], 0] [1, 16] [1, 1] : tensor<8x16xf32> to tensor<16xf32>
// TILE: scf.for %[[C:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[CI:[^ ]+]] = %[[RI]]) -> (tensor<16x32xf32>)
// TILE-NEXT: %[[PART:.+]] = tensor.extract_slice %[[CI]][%[[RR]], %[[C]]] [1, 16] [1, 1] : tensor<16x32xf32> to tensor<16xf32>
// TILE-NEXT: %[[COPIED:.+]] = linalg.copy ins(%[[SEG]] : tensor<16xf32>) outs(%[[PART]] : tensor<16xf32>)
// TILE-NEXT: tensor.insert_slice %[[COPIED]] into %[[CI]][%[[RR]], %[[C]]] [1, 16] [1, 1] : tensor<16xf32> into tensor<16x32xf32>
//   Level 0: q0 k0^T accumulates on top.
// TILE: %[[SCORES:.+]] = linalg.matmul ins(%[[QTILE0]], %[[KTILE0]] : tensor<16x4xf32>, tensor<4x32xf32>) outs(%[[INIT]] : tensor<16x32xf32>)
//   Masks: -inf past the key length (padding included) and above the
//   diagonal, from each position's original key offset.
// TILE: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// TILE: %[[OFFSETS:.+]] = arith.constant dense<[0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31]> : tensor<32xindex>
// TILE: %[[MASKED:.+]] = linalg.generic {indexing_maps = [#[[$ROWB]], #[[$ID2]]], {{.*}} ins(%[[OFFSETS]] : tensor<32xindex>) outs(%[[SCORES]] : tensor<16x32xf32>)
// TILE-NEXT: ^bb0(%[[OFF:.+]]: index, %{{.+}}: f32):
// TILE-NEXT: %[[II:.+]] = linalg.index 0 : index
// TILE-NEXT: %[[ROW:.+]] = arith.addi %[[I0]], %[[II]] : index
// TILE-NEXT: %[[COL:.+]] = arith.addi %[[J0]], %[[OFF]] : index
// TILE-NEXT: %[[PAST:.+]] = arith.cmpi sge, %[[COL]], %[[KLENB]] : index
// TILE-NEXT: %[[AHEAD:.+]] = arith.cmpi sgt, %[[COL]], %[[ROW]] : index
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
// TILE: %[[NACC:.+]] = linalg.matmul ins(%[[P]], %[[VTILE]] : tensor<16x32xf32>, tensor<32x4xf32>) outs(%[[SACC]] : tensor<16x4xf32>)
// TILE: %[[NMAX:.+]] = linalg.copy ins(%[[NEWMAX]] : tensor<16xf32>) outs(%[[MAXI]] : tensor<16xf32>)
// TILE: tensor.expand_shape %[[NACC]]
// TILE: tensor.expand_shape %[[NMAX]]
// TILE: tensor.expand_shape %[[NSUM]]
// TILE: scf.yield
//   The tile goes back as a 16 x 4 matrix and two rows.
// TILE: %[[RACC:.+]] = tensor.collapse_shape %[[LOOP]]#0 {{\[\[}}0, 1], [2]] : tensor<1x16x4xf32> into tensor<16x4xf32>
// TILE: %[[RMAX:.+]] = tensor.collapse_shape %[[LOOP]]#1 {{\[\[}}0, 1, 2]] : tensor<1x1x16xf32> into tensor<16xf32>
// TILE: %[[RSUM:.+]] = tensor.collapse_shape %[[LOOP]]#2 {{\[\[}}0, 1, 2]] : tensor<1x1x16xf32> into tensor<16xf32>
// TILE: scf.forall.in_parallel
// TILE-NEXT: tensor.parallel_insert_slice %[[RACC]] into %[[AO]][%[[B]], %[[I0]], %{{.+}}] [1, 16, 4] [1, 1, 1] : tensor<16x4xf32> into tensor<2x112x8xf32>
// TILE-NEXT: tensor.parallel_insert_slice %[[RMAX]] into %[[MO]][%[[B]], %[[H]], %[[I0]]] [1, 1, 16] [1, 1, 1] : tensor<16xf32> into tensor<2x2x112xf32>
// TILE-NEXT: tensor.parallel_insert_slice %[[RSUM]] into %[[SO]][%[[B]], %[[H]], %[[I0]]] [1, 1, 16] [1, 1, 1] : tensor<16xf32> into tensor<2x2x112xf32>
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
// Default tiles shrink to the sequences (24 x 40): nothing to pad, nothing
// to mask.
// DEFAULT-LABEL: func.func @cross
// DEFAULT-NOT: tensor.pad
// DEFAULT: scf.forall ({{.*}}) = (0, 0, 0) to (1, 1, 24) step (1, 1, 24)
// DEFAULT: %[[NT:.+]] = arith.ceildivsi %[[C40:.+]], %[[C40B:.+]] : index
// DEFAULT: scf.for
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<24x4xf32>, tensor<4x40xf32>) outs(%{{.+}} : tensor<24x40xf32>)
// DEFAULT-NOT: arith.cmpi
// DEFAULT-NOT: tensor.expand_shape %{{.+}} {{\[\[}}0, 1], [2, 3]]
// DEFAULT: return
// Tiles 16 x 32: both sequences padded, two query tiles, two key tiles.
// TILE-LABEL: func.func @cross
// TILE-SAME: (%[[Q:[^:]+]]: tensor<1x24x4xf32>, %[[K:[^:]+]]: tensor<1x40x4xf32>
// TILE: tensor.pad %[[Q]] low[0, 0, 0] high[0, 8, 0]
// TILE: } : tensor<1x24x4xf32> to tensor<1x32x4xf32>
// TILE: tensor.pad %[[K]] low[0, 0, 0] high[0, 24, 0]
// TILE: } : tensor<1x40x4xf32> to tensor<1x64x4xf32>
// TILE: scf.forall ({{.*}}) = (0, 0, 0) to (1, 1, 32) step (1, 1, 16)
// TILE-NOT: tensor.extract %
// TILE: %[[C40:.+]] = arith.constant 40 : index
// TILE: %[[NT:.+]] = arith.ceildivsi %[[C40]], %{{.+}} : index
// TILE: scf.for
// TILE: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<16x4xf32>, tensor<4x32xf32>) outs(%{{.+}} : tensor<16x32xf32>)
// TILE: arith.cmpi sge
// TILE-NOT: arith.cmpi sgt
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
// ROUND: scf.forall ({{.*}}) = (0, 0, 0) to (1, 1, 24) step (1, 1, 8)
// ROUND: scf.for {{.*}} -> (tensor<1x8x4xf32>, tensor<1x1x8xf32>, tensor<1x1x8xf32>)
// ROUND: tensor.extract_slice {{.*}} [1, 1, 8, 4] [1, 1, 1, 1] : tensor<1x1x24x4xf32> to tensor<8x4xf32>
// ROUND: tensor.extract_slice {{.*}} [1, 1, 2, 4] [1, 1, 1, 1] : tensor<1x1x6x4xf32> to tensor<2x4xf32>
// ROUND: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<2x4xf32>, tensor<4x3xf32>) outs(%{{.+}} : tensor<2x3xf32>)
// ROUND: scf.for {{.*}} -> (tensor<8x12xf32>)
// ROUND: linalg.copy ins(%{{.+}} : tensor<3xf32>) outs(%{{.+}} : tensor<3xf32>)
// ROUND: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<8x4xf32>, tensor<4x12xf32>) outs(%{{.+}} : tensor<8x12xf32>)
// ROUND: arith.constant dense<[0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]> : tensor<12xindex>
// ROUND: return
// Default tiles: 20 is already a multiple of 4, one tile each way.
// DEFAULT-LABEL: func.func @round_tiles
// DEFAULT-NOT: tensor.pad
// DEFAULT: scf.forall ({{.*}}) = (0, 0, 0) to (1, 1, 20) step (1, 1, 20)
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<5x4xf32>, tensor<4x5xf32>) outs(%{{.+}} : tensor<5x5xf32>)
// DEFAULT: scf.for {{.*}} -> (tensor<20x20xf32>)
// DEFAULT: linalg.copy ins(%{{.+}} : tensor<5xf32>) outs(%{{.+}} : tensor<5xf32>)
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<20x4xf32>, tensor<4x20xf32>) outs(%{{.+}} : tensor<20x20xf32>)
func.func @round_tiles(%q0: tensor<1x20x4xf32>, %q1: tensor<1x5x4xf32>, %k0: tensor<1x20x4xf32>, %k1: tensor<1x5x4xf32>, %v: tensor<1x20x4xf32>, %a: tensor<1x20x4xf32>, %m: tensor<1x1x20xf32>, %s: tensor<1x1x20xf32>) -> tensor<1x20x4xf32> {
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<1x20x4xf32>, tensor<1x5x4xf32>) keys(%k0, %k1 : tensor<1x20x4xf32>, tensor<1x5x4xf32>) values(%v : tensor<1x20x4xf32>) outs(%a, %m, %s : tensor<1x20x4xf32>, tensor<1x1x20xf32>, tensor<1x1x20xf32>) {causal = true, factors = array<i64: 1, 4>} -> tensor<1x20x4xf32>, tensor<1x1x20xf32>, tensor<1x1x20xf32>
  return %acc : tensor<1x20x4xf32>
}

// -----

// Factors 1, 2, 3 form no divisibility chain: keys stay in order (no
// reordering, no offset table) and each coarse block is added to the
// (rows / f, f, cols / f, f) view of the scores. T = 12 fits one 12 x 12 tile.
// DEFAULT-DAG: #[[$COARSE:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2)>
// DEFAULT-DAG: #[[$FINE:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// DEFAULT-LABEL: func.func @no_chain
// DEFAULT-NOT: dense<
// DEFAULT: scf.forall ({{.*}}) = (0, 0, 0) to (1, 1, 12) step (1, 1, 12)
// DEFAULT: %[[S0:.+]] = linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<12x4xf32>, tensor<4x12xf32>) outs(%{{.+}} : tensor<12x12xf32>)
// DEFAULT: %[[S1:.+]] = linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<6x4xf32>, tensor<4x6xf32>) outs(%{{.+}} : tensor<6x6xf32>)
// DEFAULT: %[[V1:.+]] = tensor.expand_shape %[[S0]] {{\[\[}}0, 1], [2, 3]] output_shape [6, 2, 6, 2] : tensor<12x12xf32> into tensor<6x2x6x2xf32>
// DEFAULT: linalg.generic {indexing_maps = [#[[$COARSE]], #[[$FINE]]], {{.*}} ins(%[[S1]] : tensor<6x6xf32>) outs(%[[V1]] : tensor<6x2x6x2xf32>)
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x4xf32>, tensor<4x4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
// DEFAULT: tensor.expand_shape %{{.+}} {{\[\[}}0, 1], [2, 3]] output_shape [4, 3, 4, 3] : tensor<12x12xf32> into tensor<4x3x4x3xf32>
// DEFAULT-NOT: dense<
// DEFAULT: return
func.func @no_chain(%q0: tensor<1x12x4xf32>, %q1: tensor<1x6x4xf32>, %q2: tensor<1x4x4xf32>, %k0: tensor<1x12x4xf32>, %k1: tensor<1x6x4xf32>, %k2: tensor<1x4x4xf32>, %v: tensor<1x12x4xf32>, %a: tensor<1x12x4xf32>, %m: tensor<1x1x12xf32>, %s: tensor<1x1x12xf32>) -> (tensor<1x12x4xf32>, tensor<1x1x12xf32>, tensor<1x1x12xf32>) {
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1, %q2 : tensor<1x12x4xf32>, tensor<1x6x4xf32>, tensor<1x4x4xf32>) keys(%k0, %k1, %k2 : tensor<1x12x4xf32>, tensor<1x6x4xf32>, tensor<1x4x4xf32>) values(%v : tensor<1x12x4xf32>) outs(%a, %m, %s : tensor<1x12x4xf32>, tensor<1x1x12xf32>, tensor<1x1x12xf32>) {causal = true, factors = array<i64: 1, 2, 3>} -> tensor<1x12x4xf32>, tensor<1x1x12xf32>, tensor<1x1x12xf32>
  return %acc, %max, %sum : tensor<1x12x4xf32>, tensor<1x1x12xf32>, tensor<1x1x12xf32>
}

// -----

// The backward (two levels, causal, T = 128, d = 32, 64 x 64 tiles):
// upstream tiling gives the parallel loop over (batch, head); per head, key
// tiles outside (their count from the key length) carrying dQ, the tile's
// dK^T per level and dV^T, query tiles inside from the first one that
// reaches the key tile (causal). Per tile pair: the level-1 block (32 x 32)
// once, broadcast into the 64 x 64 scores with the level-0 block added; P
// from the lse (masked only where the tile crosses the diagonal); dV^T +=
// dout^T P; dP = dout V^T; dS; the level-1 block sums; then dQ and dK^T per
// level, each from its own block. Nothing of size T x T.
// DEFAULT-LABEL: func.func @backward
// DEFAULT: scf.forall (%{{[^,]+}}, %{{[^)]+}}) in (1, 2) shared_outs(
// DEFAULT: scf.for %[[KT:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.*}}) -> (tensor<128x32xf32>, tensor<64x32xf32>, tensor<2x32x64xf32>, tensor<2x32x32xf32>, tensor<2x32x64xf32>)
// DEFAULT: scf.for %{{[^ ]+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.*}}) -> (tensor<128x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>, tensor<32x32xf32>, tensor<32x64xf32>)
// DEFAULT: linalg.matmul ins(%{{[^,]+}}, %{{[^ ]+}} : tensor<32x32xf32>, tensor<32x32xf32>) outs(%{{[^ ]+}} : tensor<32x32xf32>)
// DEFAULT: linalg.matmul ins(%{{[^,]+}}, %{{[^ ]+}} : tensor<64x32xf32>, tensor<32x64xf32>) outs(%{{[^ ]+}} : tensor<64x64xf32>)
// DEFAULT: scf.if
// DEFAULT: math.exp
// DEFAULT: linalg.matmul ins(%{{[^,]+}}, %{{[^ ]+}} : tensor<32x64xf32>, tensor<64x64xf32>) outs(%{{[^ ]+}} : tensor<32x64xf32>)
// DEFAULT: linalg.matmul ins(%{{[^,]+}}, %{{[^ ]+}} : tensor<64x32xf32>, tensor<32x64xf32>) outs(%{{[^ ]+}} : tensor<64x64xf32>)
// DEFAULT: arith.subf
// DEFAULT: linalg.matmul ins(%{{[^,]+}}, %{{[^ ]+}} : tensor<64x64xf32>, tensor<64x32xf32>) outs(%{{[^ ]+}} : tensor<64x32xf32>)
// DEFAULT: linalg.matmul ins(%{{[^,]+}}, %{{[^ ]+}} : tensor<32x32xf32>, tensor<32x32xf32>) outs(%{{[^ ]+}} : tensor<32x32xf32>)
// DEFAULT: linalg.matmul ins(%{{[^,]+}}, %{{[^ ]+}} : tensor<32x64xf32>, tensor<64x64xf32>) outs(%{{[^ ]+}} : tensor<32x64xf32>)
// DEFAULT: linalg.matmul ins(%{{[^,]+}}, %{{[^ ]+}} : tensor<32x32xf32>, tensor<32x32xf32>) outs(%{{[^ ]+}} : tensor<32x32xf32>)
// DEFAULT: scf.forall.in_parallel
// DEFAULT-NOT: 128x128
// DEFAULT: return
func.func @backward(%q0: tensor<1x128x64xf32>, %q1: tensor<1x64x64xf32>, %k0: tensor<1x128x64xf32>, %k1: tensor<1x64x64xf32>, %v: tensor<1x128x64xf32>, %dy: tensor<1x128x64xf32>, %lse: tensor<1x2x128xf32>, %delta: tensor<1x2x128xf32>) -> (tensor<1x128x64xf32>, tensor<1x64x64xf32>, tensor<1x128x64xf32>, tensor<1x64x64xf32>, tensor<1x128x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x128x64xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x128x64xf32>) -> tensor<1x128x64xf32>
  %e1 = tensor.empty() : tensor<1x64x64xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x64x64xf32>) -> tensor<1x64x64xf32>
  %g:5 = hkt.online_attention_backward ins(%q0, %q1 : tensor<1x128x64xf32>, tensor<1x64x64xf32>) keys(%k0, %k1 : tensor<1x128x64xf32>, tensor<1x64x64xf32>) values(%v : tensor<1x128x64xf32>) grads(%dy : tensor<1x128x64xf32>) stats(%lse, %delta : tensor<1x2x128xf32>, tensor<1x2x128xf32>) outs(%z0, %z1 : tensor<1x128x64xf32>, tensor<1x64x64xf32>) key_grads(%z0, %z1 : tensor<1x128x64xf32>, tensor<1x64x64xf32>) value_grad(%z0 : tensor<1x128x64xf32>) {causal = true, factors = array<i64: 1, 2>} -> (tensor<1x128x64xf32>, tensor<1x64x64xf32>), (tensor<1x128x64xf32>, tensor<1x64x64xf32>), tensor<1x128x64xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4 : tensor<1x128x64xf32>, tensor<1x64x64xf32>, tensor<1x128x64xf32>, tensor<1x64x64xf32>, tensor<1x128x64xf32>
}

// -----

// A long sequence (Tk >= 8192): the backward takes key tiles 4x tile-k (256
// by default; the forward keeps 64): each key tile streams the head's query
// side through the caches once, so wider tiles stream it less often.
// DEFAULT-LABEL: func.func @backward_long
// DEFAULT: scf.for %{{[^ ]+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.*}}) -> (tensor<8192x32xf32>, tensor<32x32x256xf32>, tensor<32x32x256xf32>)
// DEFAULT: scf.for %{{[^ ]+}} = %{{.+}} to %{{.+}} step %c64{{.*}} iter_args({{.*}}) -> (tensor<8192x32xf32>, tensor<32x256xf32>, tensor<32x256xf32>)
func.func @backward_long(%q0: tensor<1x8192x64xf32>, %v: tensor<1x8192x64xf32>, %lse: tensor<1x2x8192xf32>) -> tensor<1x8192x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x8192x64xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x8192x64xf32>) -> tensor<1x8192x64xf32>
  %g:3 = hkt.online_attention_backward ins(%q0 : tensor<1x8192x64xf32>) keys(%q0 : tensor<1x8192x64xf32>) values(%v : tensor<1x8192x64xf32>) grads(%v : tensor<1x8192x64xf32>) stats(%lse, %lse : tensor<1x2x8192xf32>, tensor<1x2x8192xf32>) outs(%z0 : tensor<1x8192x64xf32>) key_grads(%z0 : tensor<1x8192x64xf32>) value_grad(%z0 : tensor<1x8192x64xf32>) {causal = true, factors = array<i64: 1>} -> (tensor<1x8192x64xf32>), (tensor<1x8192x64xf32>), tensor<1x8192x64xf32>
  return %g#2 : tensor<1x8192x64xf32>
}

// -----

// A dynamic sequence length (hkt-compile --max-seq-len): the padded length
// ceil(T / 64) * 64 is computed at run time, the key lengths are clamped to
// the real T, and each query tile's running state is cast to its static
// tile shape (every tile of the padded op is whole), so the tile algorithm
// stays static.
// DEFAULT-LABEL: func.func @dynamic_length
// DEFAULT: %[[T:.+]] = tensor.dim %{{.+}}, %{{.+}} : tensor<2x?x8xf32>
// DEFAULT: %[[TILES:.+]] = arith.ceildivui %[[T]], %{{.+}} : index
// DEFAULT: tensor.pad %{{.+}} low[0, 0, 0] high[0, %{{.+}}, 0]
// DEFAULT: } : tensor<2x?x8xf32> to tensor<2x?x8xf32>
// DEFAULT: arith.index_cast %{{.+}} : index to i32
// DEFAULT: arith.minsi
// DEFAULT: scf.forall ({{.*}}) = (0, 0, 0) to (2, 2, %{{.+}}) step (1, 1, 64)
// DEFAULT: tensor.cast %{{.+}} : tensor<1x1x?xf32> to tensor<1x1x64xf32>
// DEFAULT: tensor.cast %{{.+}} : tensor<1x?x4xf32> to tensor<1x64x4xf32>
// DEFAULT: tensor.extract_slice {{.*}} : tensor<2x?x8xf32> to tensor<2x?x8xf32>
func.func @dynamic_length(%q0: tensor<2x?x8xf32>, %q1: tensor<2x?x8xf32>, %k0: tensor<2x?x8xf32>, %k1: tensor<2x?x8xf32>, %v: tensor<2x?x8xf32>, %len: tensor<2xi32>, %a: tensor<2x?x8xf32>, %m: tensor<2x2x?xf32>, %s: tensor<2x2x?xf32>) -> (tensor<2x?x8xf32>, tensor<2x2x?xf32>, tensor<2x2x?xf32>) {
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<2x?x8xf32>, tensor<2x?x8xf32>) keys(%k0, %k1 : tensor<2x?x8xf32>, tensor<2x?x8xf32>) values(%v : tensor<2x?x8xf32>) lengths(%len : tensor<2xi32>) outs(%a, %m, %s : tensor<2x?x8xf32>, tensor<2x2x?xf32>, tensor<2x2x?xf32>) {causal = true, factors = array<i64: 1, 2>} -> tensor<2x?x8xf32>, tensor<2x2x?xf32>, tensor<2x2x?xf32>
  return %acc, %max, %sum : tensor<2x?x8xf32>, tensor<2x2x?xf32>, tensor<2x2x?xf32>
}
