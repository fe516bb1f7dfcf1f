// RUN: hkt-opt %s --hkt-nvvm-lower-online-attention="precision=tf32" | FileCheck %s
// RUN: not hkt-opt %s --hkt-nvvm-lower-online-attention="precision=fp8" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: unknown precision 'fp8' (f32; tf32 or bf16 for the tensor cores)

// The tensor-core kernel (tf32 operands, f32 accumulation): two levels,
// causal, B = 1, T = 40, D = 32, H = 2 (head width 16). The level-0
// queries are padded to whole tiles (64 rows), so that each warp loads its
// 32 rows as whole 16 x 8 fragments, once; per key tile Q0 K0^T and P V
// are wmma m16n16k8 on fragments of shared memory, the scores and the
// accumulator live in shared memory (64 x 32 and 64 x 16), the running max
// and sum in each row's thread.
// CHECK-LABEL: func.func @tensor_cores
// CHECK: %[[PAD:.+]] = tensor.pad %{{.+}} low[0, 0, 0] high[0, 24, 0]
// CHECK: %[[Q0:.+]] = bufferization.to_buffer %[[PAD]] read_only : tensor<1x64x32xf32> to memref<1x64x32xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c2{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c64
// CHECK: %[[K0S:.+]] = memref.alloca() : memref<32x16xf32, #gpu.address_space<workgroup>>
// CHECK: %[[VS:.+]] = memref.alloca() : memref<32x16xf32, #gpu.address_space<workgroup>>
// CHECK: %[[SS:.+]] = memref.alloca() : memref<64x32xf32, #gpu.address_space<workgroup>>
// CHECK: %[[OS:.+]] = memref.alloca() : memref<64x16xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-4: gpu.subgroup_mma_load_matrix %[[Q0]][%{{.+}}, %{{.+}}, %{{.+}}] {leadDimension = 32 : index} : memref<1x64x32xf32> -> !gpu.mma_matrix<16x8xf32, "AOp">
// CHECK: scf.for {{.*}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (f32, f32)
// CHECK: gpu.barrier
//   Scores: B = K0^T, read transposed, the mma told so (row.col).
// CHECK: gpu.subgroup_mma_constant_matrix
// CHECK: gpu.subgroup_mma_load_matrix %[[K0S]][{{.*}}] {leadDimension = 16 : index, transpose} : memref<32x16xf32, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<8x16xf32, "BOp">
// CHECK: gpu.subgroup_mma_compute {{.*}} {b_transpose}
// CHECK: gpu.subgroup_mma_store_matrix %{{.+}}, %[[SS]][{{.*}}] {leadDimension = 32 : index}
// CHECK: gpu.barrier
//   The row's softmax over the tile: P in place of the scores, the
//   accumulator row rescaled.
// CHECK: math.exp
// CHECK: memref.store %{{.+}}, %[[SS]]
// CHECK: memref.store %{{.+}}, %[[OS]]
// CHECK: gpu.barrier
//   acc += P V.
// CHECK: gpu.subgroup_mma_load_matrix %[[OS]][{{.*}}] {leadDimension = 16 : index} : memref<64x16xf32, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK: gpu.subgroup_mma_load_matrix %[[SS]][{{.*}}] {leadDimension = 32 : index} : {{.*}} -> !gpu.mma_matrix<16x8xf32, "AOp">
// CHECK: gpu.subgroup_mma_load_matrix %[[VS]][{{.*}}] {leadDimension = 16 : index} : {{.*}} -> !gpu.mma_matrix<8x16xf32, "BOp">
// CHECK: gpu.subgroup_mma_compute
// CHECK-NOT: b_transpose
// CHECK: gpu.subgroup_mma_store_matrix %{{.+}}, %[[OS]]
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: memref.load %[[OS]]
func.func @tensor_cores(%q0: tensor<1x40x32xf32>, %q1: tensor<1x20x32xf32>, %k0: tensor<1x40x32xf32>, %k1: tensor<1x20x32xf32>, %v: tensor<1x40x32xf32>, %a: tensor<1x40x32xf32>, %m: tensor<1x2x40xf32>, %s: tensor<1x2x40xf32>) -> tensor<1x40x32xf32> {
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<1x40x32xf32>, tensor<1x20x32xf32>) keys(%k0, %k1 : tensor<1x40x32xf32>, tensor<1x20x32xf32>) values(%v : tensor<1x40x32xf32>) outs(%a, %m, %s : tensor<1x40x32xf32>, tensor<1x2x40xf32>, tensor<1x2x40xf32>) {causal = true, factors = array<i64: 1, 2>} -> tensor<1x40x32xf32>, tensor<1x2x40xf32>, tensor<1x2x40xf32>
  return %acc : tensor<1x40x32xf32>
}
