// RUN: hkt-opt %s --split-input-file --verify-diagnostics --hkt-nvvm-lower-online-attention="precision=bf16" | FileCheck %s
// RUN: not hkt-opt %s --split-input-file --hkt-nvvm-lower-online-attention 2>&1 | FileCheck %s --check-prefix=F32BWD
// F32BWD: error: 'hkt.online_attention_backward' op has a GPU lowering only in bf16 (--precision bf16)

// The bf16 FlashAttention-2 kernel: two levels, causal, B = 1, T = 40,
// D = 32, H = 2 (head width 16). One block of four warps (128 threads) per
// 64-row query tile and head, named attention_fwd. K0 and V first become
// bf16 tensors (the kernels to_bf16), which the kernel copies to shared
// memory with cp.async. Shared memory in bf16, ldmatrix rows padded by 8
// elements (16 bytes): level-0 queries (64 rows), keys and values (two
// stages of 32-key tiles); level 1's coarse queries (33 rows: any
// 64 fine rows touch at most 33 coarse ones) and keys (17), rows padded by
// 16 bytes for ldmatrix, and its coarse scores in f32.
// CHECK-LABEL: func.func @flash
// CHECK: %[[K16:.+]] = linalg.generic {{.*}} ins(%arg2 : tensor<1x40x32xf32>) outs(%{{.+}} : tensor<1x40x32xbf16>) attrs = {{.*}}hkt.kernel = "to_bf16"
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: %[[KB:.+]] = bufferization.to_buffer %[[K16]] read_only
// CHECK: %[[V16:.+]] = linalg.generic {{.*}} ins(%arg4 : tensor<1x40x32xf32>) outs(%{{.+}} : tensor<1x40x32xbf16>) attrs = {{.*}}hkt.kernel = "to_bf16"
// CHECK: %[[VB:.+]] = bufferization.to_buffer %[[V16]] read_only
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c2{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c128{{.*}}, {{.*}}) function(@attention_fwd)
// CHECK: %[[QS:.+]] = memref.alloca() : memref<64x24xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[KS:.+]] = memref.alloca() : memref<64x24xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[VS:.+]] = memref.alloca() : memref<64x24xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[CQ:.+]] = memref.alloca() : memref<33x24xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[CK:.+]] = memref.alloca() : memref<17x24xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[CS:.+]] = memref.alloca() : memref<33x18xf32, #gpu.address_space<workgroup>>
//   Q rounded to bf16 as it is staged; the warp's A fragments loaded once.
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: gpu.barrier
// CHECK: %[[QF:.+]] = nvgpu.ldmatrix %[[QS]][%{{.+}}, %{{.+}}] {numTiles = 4 : i32, transpose = false} : memref<64x24xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
//   Tile 0's keys and values by cp.async (16 bytes, zero past the end),
//   committed as a group (the mark hkt-nvvm-async-copy-groups expands).
// CHECK: nvgpu.device_async_copy %[[KB]][%{{.+}}, %{{.+}}, %{{.+}}], %[[KS]][%{{.+}}, %{{.+}}], 8, %{{.+}} {bypassL1}
// CHECK: nvgpu.device_async_copy %[[VB]][%{{.+}}, %{{.+}}, %{{.+}}], %[[VS]][%{{.+}}, %{{.+}}], 8, %{{.+}} {bypassL1}
// CHECK: gpu.barrier {hkt.cp_async_commit}
//   The tile loop carries each lane's two rows' max and partial sum and its
//   two 16 x 8 accumulator fragments (8 values). It first copies the next
//   tile into the other stage, then waits for all groups but that one.
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK: nvgpu.device_async_copy %[[KB]]
// CHECK: nvgpu.device_async_copy %[[VB]]
// CHECK: gpu.barrier {hkt.cp_async_wait = 1 : i32}
//   Coarse scores once per tile pair, on mma.sync too (the aligned 32 x 16
//   block: four m16n8 fragments, one a warp, stored where the warp's
//   fragment index is live), then S = Q0 K0^T (K not transposed: its rows
//   are B's columns).
// CHECK: nvgpu.ldmatrix %[[CQ]]{{.*}}numTiles = 4 : i32, transpose = false
// CHECK: nvgpu.ldmatrix %[[CK]]{{.*}}numTiles = 2 : i32, transpose = false
// CHECK: nvgpu.mma.sync
// CHECK: scf.if
// CHECK: memref.store %{{.+}}, %[[CS]]
// CHECK: gpu.barrier
// CHECK: %[[KF:.+]] = nvgpu.ldmatrix %[[KS]][%{{.+}}, %{{.+}}] {numTiles = 2 : i32, transpose = false}
// CHECK: nvgpu.mma.sync(%[[QF]], %[[KF]], %{{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
//   Coarse scores added to the elements they cover; masks; the row max
//   over the quad by shuffles.
// CHECK: memref.load %[[CS]]
// CHECK: arith.select
// CHECK: gpu.shuffle xor %{{.+}}, %c1_i32
// CHECK: gpu.shuffle xor %{{.+}}, %c2_i32
// CHECK: math.exp
//   P re-packed to a bf16 A fragment in registers; O += P V with V's
//   fragments transposed by ldmatrix.
// CHECK: %[[P:.+]] = arith.truncf %{{.+}} : vector<4x2xf32> to vector<4x2xbf16>
// CHECK: %[[VF:.+]] = nvgpu.ldmatrix %[[VS]][%{{.+}}, %{{.+}}] {numTiles = 2 : i32, transpose = true}
// CHECK: nvgpu.mma.sync(%[[P]], %[[VF]], %{{.+}})
// CHECK: gpu.barrier
// CHECK: scf.yield
//   The quad's partial sums reduced once, after the loop; rows past the
//   sequence store nothing.
// CHECK: gpu.shuffle xor
// CHECK: scf.if
// CHECK: bufferization.to_tensor
func.func @flash(%q0: tensor<1x40x32xf32>, %q1: tensor<1x20x32xf32>, %k0: tensor<1x40x32xf32>, %k1: tensor<1x20x32xf32>, %v: tensor<1x40x32xf32>, %a: tensor<1x40x32xf32>, %m: tensor<1x2x40xf32>, %s: tensor<1x2x40xf32>) -> tensor<1x40x32xf32> {
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<1x40x32xf32>, tensor<1x20x32xf32>) keys(%k0, %k1 : tensor<1x40x32xf32>, tensor<1x20x32xf32>) values(%v : tensor<1x40x32xf32>) outs(%a, %m, %s : tensor<1x40x32xf32>, tensor<1x2x40xf32>, tensor<1x2x40xf32>) {causal = true, factors = array<i64: 1, 2>} -> tensor<1x40x32xf32>, tensor<1x2x40xf32>, tensor<1x2x40xf32>
  return %acc : tensor<1x40x32xf32>
}

// -----

// A head width the m16n8k16 fragments cannot tile.
func.func @odd_width(%q: tensor<1x40x24xf32>, %v: tensor<1x40x24xf32>, %a: tensor<1x40x24xf32>, %m: tensor<1x1x40xf32>, %s: tensor<1x1x40xf32>) -> tensor<1x40x24xf32> {
  // expected-error @below {{cannot be lowered for the GPU in bf16: the head width must be a multiple of 16 up to 256 (got 24); use --precision f32}}
  %acc, %max, %sum = hkt.online_attention ins(%q : tensor<1x40x24xf32>) keys(%q : tensor<1x40x24xf32>) values(%v : tensor<1x40x24xf32>) outs(%a, %m, %s : tensor<1x40x24xf32>, tensor<1x1x40xf32>, tensor<1x1x40xf32>) {causal = true, factors = array<i64: 1>} -> tensor<1x40x24xf32>, tensor<1x1x40xf32>, tensor<1x1x40xf32>
  return %acc : tensor<1x40x24xf32>
}

// -----

// The backward (FlashAttention-2 manner), two levels, causal, key lengths:
// the gradients start as copies of their initial values, then two kernels
// add to them.
// CHECK-LABEL: func.func @backward
// CHECK-COUNT-5: memref.copy
//   attention_bwd_dkdv: a block per 64 keys; the keys and values once, then
//   per 32-query tile the queries, dO, lse (+inf past the end) and delta.
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c2{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c128{{.*}}, {{.*}}) function(@attention_bwd_dkdv)
// CHECK: %[[KS:.+]] = memref.alloca() : memref<64x24xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[VS:.+]] = memref.alloca() : memref<64x24xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[QS:.+]] = memref.alloca() : memref<32x24xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[DOS:.+]] = memref.alloca() : memref<32x24xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.alloca() : memref<17x34xf32, #gpu.address_space<workgroup>>
// CHECK: %[[G:.+]] = memref.alloca() : memref<17x34xf32, #gpu.address_space<workgroup>>
//   The query tiles from the block's diagonal: dV and dK0 in registers
//   (two 16 x 8 fragments each at head width 16).
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
//   S^T = K Q^T and dP^T = V dO^T on mma.sync.
// CHECK: nvgpu.ldmatrix %[[KS]]
// CHECK: nvgpu.ldmatrix %[[QS]]{{.*}}transpose = false
// CHECK: nvgpu.mma.sync
// CHECK: nvgpu.ldmatrix %[[VS]]
// CHECK: nvgpu.ldmatrix %[[DOS]]{{.*}}transpose = false
// CHECK: nvgpu.mma.sync
//   P from the saved lse; the coarse gradient block summed in shared memory.
// CHECK: math.exp
// CHECK: memref.atomic_rmw addf %{{.+}}, %[[G]]
//   dV += P^T dO and dK0 += dS^T Q (dO and Q transposed by ldmatrix).
// CHECK: nvgpu.ldmatrix %[[DOS]]{{.*}}transpose = true
// CHECK: nvgpu.mma.sync
// CHECK: nvgpu.ldmatrix %[[QS]]{{.*}}transpose = true
// CHECK: nvgpu.mma.sync
//   dQ^(1) and dK^(1) from the coarse block, by f32 atomics in global
//   memory (coarse rows straddle tiles).
// CHECK: memref.atomic_rmw addf %{{.+}}, %{{.+}} : (f32, memref<1x20x32xf32>)
// CHECK: memref.atomic_rmw addf %{{.+}}, %{{.+}} : (f32, memref<1x20x32xf32>)
// CHECK: scf.yield
//   attention_bwd_dq: a block per 64 query rows, dQ0 = dS K in registers,
//   written once (no atomics).
// CHECK: gpu.launch {{.*}} function(@attention_bwd_dq)
// CHECK: scf.for
// CHECK: nvgpu.mma.sync
// CHECK: math.exp
// CHECK: nvgpu.ldmatrix {{.*}}transpose = true
// CHECK: nvgpu.mma.sync
// CHECK-NOT: memref.atomic_rmw
// CHECK: scf.yield
// CHECK-COUNT-5: bufferization.to_tensor
func.func @backward(%q0: tensor<1x40x32xf32>, %q1: tensor<1x20x32xf32>, %k0: tensor<1x40x32xf32>, %k1: tensor<1x20x32xf32>, %v: tensor<1x40x32xf32>, %do: tensor<1x40x32xf32>, %lse: tensor<1x2x40xf32>, %delta: tensor<1x2x40xf32>, %len: tensor<1xi32>, %zq0: tensor<1x40x32xf32>, %zq1: tensor<1x20x32xf32>, %zk0: tensor<1x40x32xf32>, %zk1: tensor<1x20x32xf32>, %zv: tensor<1x40x32xf32>) -> (tensor<1x40x32xf32>, tensor<1x20x32xf32>, tensor<1x40x32xf32>, tensor<1x20x32xf32>, tensor<1x40x32xf32>) {
  %dq:2, %dk:2, %dv = hkt.online_attention_backward ins(%q0, %q1 : tensor<1x40x32xf32>, tensor<1x20x32xf32>) keys(%k0, %k1 : tensor<1x40x32xf32>, tensor<1x20x32xf32>) values(%v : tensor<1x40x32xf32>) grads(%do : tensor<1x40x32xf32>) stats(%lse, %delta : tensor<1x2x40xf32>, tensor<1x2x40xf32>) lengths(%len : tensor<1xi32>) outs(%zq0, %zq1 : tensor<1x40x32xf32>, tensor<1x20x32xf32>) key_grads(%zk0, %zk1 : tensor<1x40x32xf32>, tensor<1x20x32xf32>) value_grad(%zv : tensor<1x40x32xf32>) {causal = true, factors = array<i64: 1, 2>} -> (tensor<1x40x32xf32>, tensor<1x20x32xf32>), (tensor<1x40x32xf32>, tensor<1x20x32xf32>), tensor<1x40x32xf32>
  return %dq#0, %dq#1, %dk#0, %dk#1, %dv : tensor<1x40x32xf32>, tensor<1x20x32xf32>, tensor<1x40x32xf32>, tensor<1x20x32xf32>, tensor<1x40x32xf32>
}

// -----

// A dynamic T: the coarse gradients' atomics stay inside each level's own
// length, read from its buffer (the last tile's coarse rows reach past it).
// CHECK-LABEL: func.func @backward_dynamic
// CHECK-SAME: %[[Q0:[a-z0-9]+]]: tensor<1x?x32xf32>, %[[Q1:[a-z0-9]+]]: tensor<1x?x32xf32>, %[[K0:[a-z0-9]+]]: tensor<1x?x32xf32>, %[[K1:[a-z0-9]+]]: tensor<1x?x32xf32>
// CHECK-DAG: %[[Q1B:.+]] = bufferization.to_buffer %[[Q1]]
// CHECK-DAG: %[[K1B:.+]] = bufferization.to_buffer %[[K1]]
// CHECK-DAG: %[[Q1ROWS:.+]] = memref.dim %[[Q1B]], %{{.+}} : memref<1x?x32xf32>
// CHECK-DAG: %[[K1ROWS:.+]] = memref.dim %[[K1B]], %{{.+}} : memref<1x?x32xf32>
// CHECK: gpu.launch {{.*}} function(@attention_bwd_dkdv)
//   Each coarse row's sum (an fma per coarse row of the other side), then
//   its atomic add where the row is inside the level.
// CHECK: math.fma
// CHECK: %[[QIN:.+]] = arith.cmpi ult, %[[QROW:.+]], %[[Q1ROWS]] : index
// CHECK-NEXT: scf.if %[[QIN]] {
// CHECK: memref.atomic_rmw addf %{{.+}}, %{{.+}}[%{{.+}}, %[[QROW]], %{{.+}}] : (f32, memref<1x?x32xf32>)
// CHECK: math.fma
// CHECK: %[[KIN:.+]] = arith.cmpi ult, %[[KROW:.+]], %[[K1ROWS]] : index
// CHECK-NEXT: scf.if %[[KIN]] {
// CHECK: memref.atomic_rmw addf %{{.+}}, %{{.+}}[%{{.+}}, %[[KROW]], %{{.+}}] : (f32, memref<1x?x32xf32>)
// CHECK: gpu.launch {{.*}} function(@attention_bwd_dq)
func.func @backward_dynamic(%q0: tensor<1x?x32xf32>, %q1: tensor<1x?x32xf32>, %k0: tensor<1x?x32xf32>, %k1: tensor<1x?x32xf32>, %v: tensor<1x?x32xf32>, %do: tensor<1x?x32xf32>, %lse: tensor<1x2x?xf32>, %delta: tensor<1x2x?xf32>, %len: tensor<1xi32>, %zq0: tensor<1x?x32xf32>, %zq1: tensor<1x?x32xf32>, %zk0: tensor<1x?x32xf32>, %zk1: tensor<1x?x32xf32>, %zv: tensor<1x?x32xf32>) -> (tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>) {
  %dq:2, %dk:2, %dv = hkt.online_attention_backward ins(%q0, %q1 : tensor<1x?x32xf32>, tensor<1x?x32xf32>) keys(%k0, %k1 : tensor<1x?x32xf32>, tensor<1x?x32xf32>) values(%v : tensor<1x?x32xf32>) grads(%do : tensor<1x?x32xf32>) stats(%lse, %delta : tensor<1x2x?xf32>, tensor<1x2x?xf32>) lengths(%len : tensor<1xi32>) outs(%zq0, %zq1 : tensor<1x?x32xf32>, tensor<1x?x32xf32>) key_grads(%zk0, %zk1 : tensor<1x?x32xf32>, tensor<1x?x32xf32>) value_grad(%zv : tensor<1x?x32xf32>) {causal = true, factors = array<i64: 1, 2>} -> (tensor<1x?x32xf32>, tensor<1x?x32xf32>), (tensor<1x?x32xf32>, tensor<1x?x32xf32>), tensor<1x?x32xf32>
  return %dq#0, %dq#1, %dk#0, %dk#1, %dv : tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>
}
