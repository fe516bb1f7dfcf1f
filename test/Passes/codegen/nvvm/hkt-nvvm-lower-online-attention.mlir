// RUN: hkt-opt %s --split-input-file --hkt-nvvm-lower-online-attention | FileCheck %s
// RUN: hkt-opt %s --split-input-file --hkt-nvvm-lower-online-attention="tile-q=32 tile-k=5" | FileCheck %s --check-prefix=TILES
// RUN: not hkt-opt %s --split-input-file --hkt-nvvm-lower-online-attention="tile-q=0" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: tile-q and tile-k must be >= 1

// Two levels (factors 1, 2), causal, key lengths; B = 2, T = 100, D = 8,
// H = 2 (head width 4). Grid: (ceil(100 / 64), heads, batch) = (2, 2, 2),
// one thread per query row of a 64-row tile.
// CHECK-LABEL: func.func @causal_lengths
// CHECK-SAME: (%[[Q0:[^:]+]]: tensor<2x100x8xf32>, %[[Q1:[^:]+]]: tensor<2x50x8xf32>, %[[K0:[^:]+]]: tensor<2x100x8xf32>
// CHECK-DAG: %[[BQ0:.+]] = bufferization.to_buffer %[[Q0]] read_only : tensor<2x100x8xf32> to memref<2x100x8xf32>
// CHECK-DAG: %[[BK0:.+]] = bufferization.to_buffer %[[K0]] read_only : tensor<2x100x8xf32> to memref<2x100x8xf32>
// CHECK: %[[ACC:.+]] = memref.alloc() : memref<2x100x8xf32>
// CHECK: %[[MAX:.+]] = memref.alloc() : memref<2x2x100xf32>
// CHECK: %[[SUM:.+]] = memref.alloc() : memref<2x2x100xf32>
// CHECK: gpu.launch blocks(%{{.+}}, %[[H:.+]], %[[B:.+]]) in (%{{.+}} = %c2{{.*}}, %{{.+}} = %c2{{.*}}, %{{.+}} = %c2{{.*}}) threads(%[[TX:[^,]+]], {{.+}} in (%{{.+}} = %c64
//   Shared: level-0 keys (32 x 4), level-1 keys (16 x 4, rows padded by a
//   word), values, the level-1 query tile, the level-1 coarse scores
//   (32 x 16, padded).
// CHECK: %[[SK0:.+]] = memref.alloca() : memref<32x4xf32, #gpu.address_space<workgroup>>
// CHECK: %[[SK1:.+]] = memref.alloca() : memref<16x5xf32, #gpu.address_space<workgroup>>
// CHECK: %[[SV:.+]] = memref.alloca() : memref<32x4xf32, #gpu.address_space<workgroup>>
// CHECK: %[[SQ1:.+]] = memref.alloca() : memref<32x4xf32, #gpu.address_space<workgroup>>
// CHECK: %[[SS1:.+]] = memref.alloca() : memref<32x17xf32, #gpu.address_space<workgroup>>
//   The level-1 query tile, staged once by the block's threads.
// CHECK: scf.for %{{.+}} = %[[TX]] to %c128{{.*}} step %c64
// CHECK: memref.store %{{.+}}, %[[SQ1]]
//   Key tiles: none past the block's last row, none past the key length.
// CHECK: %[[LEN:.+]] = memref.load %{{.+}}[%[[B]]] : memref<2xi32>
// CHECK: scf.for %{{.+}} = %c0{{.*}} to %{{.+}} step %c1{{.*}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (f32, f32, f32, f32, f32, f32)
// CHECK: memref.store %{{.+}}, %[[SK0]]
// CHECK: memref.store %{{.+}}, %[[SK1]]
// CHECK: memref.store %{{.+}}, %[[SV]]
// CHECK: gpu.barrier
//   Each coarse score once per tile pair: 32 x 16 of them over 64 threads.
// CHECK: scf.for %{{.+}} = %[[TX]] to %c512 step %c64
// CHECK-COUNT-4: math.fma
// CHECK: memref.store %{{.+}}, %[[SS1]]
// CHECK: gpu.barrier
//   16 keys per rescaling, the row's state in registers.
// CHECK: scf.for %{{.+}} = %c0{{.*}} to %c32{{.*}} step %c16 iter_args
// CHECK-COUNT-4: math.fma
// CHECK: memref.load %[[SS1]]
// CHECK: arith.cmpi ule
// CHECK: arith.select
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: memref.store %{{.+}}, %[[MAX]][%[[B]], %[[H]], %{{.+}}]
// CHECK: memref.store %{{.+}}, %[[SUM]]
// CHECK: memref.store %{{.+}}, %[[ACC]]
// CHECK: bufferization.to_tensor %[[ACC]] restrict writable
// CHECK-NOT: hkt.online_attention

// Tiles rounded up to whole coarse rows (tile-k 5 -> 6), chunks of gcd(6, 16).
// TILES-LABEL: func.func @causal_lengths
// TILES: threads(%{{.+}}) in (%{{.+}} = %c32
// TILES: memref.alloca() : memref<6x4xf32, #gpu.address_space<workgroup>>
// TILES: memref.alloca() : memref<3x5xf32, #gpu.address_space<workgroup>>
// TILES: scf.for %{{.+}} = %c0{{.*}} to %c6{{.*}} step %c2{{(_[0-9]+)?}} iter_args
func.func @causal_lengths(%q0: tensor<2x100x8xf32>, %q1: tensor<2x50x8xf32>, %k0: tensor<2x100x8xf32>, %k1: tensor<2x50x8xf32>, %v: tensor<2x100x8xf32>, %len: tensor<2xi32>, %a: tensor<2x100x8xf32>, %m: tensor<2x2x100xf32>, %s: tensor<2x2x100xf32>) -> (tensor<2x100x8xf32>, tensor<2x2x100xf32>, tensor<2x2x100xf32>) {
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<2x100x8xf32>, tensor<2x50x8xf32>) keys(%k0, %k1 : tensor<2x100x8xf32>, tensor<2x50x8xf32>) values(%v : tensor<2x100x8xf32>) lengths(%len : tensor<2xi32>) outs(%a, %m, %s : tensor<2x100x8xf32>, tensor<2x2x100xf32>, tensor<2x2x100xf32>) {causal = true, factors = array<i64: 1, 2>} -> tensor<2x100x8xf32>, tensor<2x2x100xf32>, tensor<2x2x100xf32>
  return %acc, %max, %sum : tensor<2x100x8xf32>, tensor<2x2x100xf32>, tensor<2x2x100xf32>
}

// -----

// Not causal, no lengths: every key tile is visited, no causal compare.
// CHECK-LABEL: func.func @full
// CHECK: gpu.launch
// CHECK-NOT: arith.cmpi ule
// CHECK: gpu.terminator
func.func @full(%q0: tensor<1x64x8xf32>, %k0: tensor<1x64x8xf32>, %v: tensor<1x64x8xf32>, %a: tensor<1x64x8xf32>, %m: tensor<1x1x64xf32>, %s: tensor<1x1x64xf32>) -> tensor<1x64x8xf32> {
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<1x64x8xf32>) keys(%k0 : tensor<1x64x8xf32>) values(%v : tensor<1x64x8xf32>) outs(%a, %m, %s : tensor<1x64x8xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>) {factors = array<i64: 1>} -> tensor<1x64x8xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>
  return %acc : tensor<1x64x8xf32>
}

// -----

// A dynamic batch and sequence (one module for every length): the grid is
// ceil(T / tile-q) query tiles x heads x B, read from the operands at run
// time; rows are clamped to T - 1 and keys compared with T.
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[B:[a-z0-9_]+]] = memref.dim %{{[0-9]+}}, %c0
// CHECK: %[[T:[a-z0-9_]+]] = memref.dim %{{[0-9]+}}, %c1
// CHECK: %[[QTILES:[0-9]+]] = arith.ceildivui %[[T]], %c64
// CHECK: gpu.launch blocks({{.*}}) in (%{{.+}} = %[[QTILES]], %{{.+}} = %c1{{.*}}, %{{.+}} = %[[B]]) {{.*}} function(@attention_fwd_f32)
// CHECK: arith.cmpi ult, %{{.+}}, %[[T]]
// CHECK: %[[LAST:.+]] = arith.subi %[[T]], %c1
// CHECK: arith.minui %{{.+}}, %[[LAST]]
func.func @dynamic(%q0: tensor<?x?x8xf32>, %k0: tensor<?x?x8xf32>, %v: tensor<?x?x8xf32>, %a: tensor<?x?x8xf32>, %m: tensor<?x1x?xf32>, %s: tensor<?x1x?xf32>) -> tensor<?x?x8xf32> {
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<?x?x8xf32>) keys(%k0 : tensor<?x?x8xf32>) values(%v : tensor<?x?x8xf32>) outs(%a, %m, %s : tensor<?x?x8xf32>, tensor<?x1x?xf32>, tensor<?x1x?xf32>) {causal = true, factors = array<i64: 1>} -> tensor<?x?x8xf32>, tensor<?x1x?xf32>, tensor<?x1x?xf32>
  return %acc : tensor<?x?x8xf32>
}
