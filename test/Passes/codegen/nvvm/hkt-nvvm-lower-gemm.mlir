// RUN: hkt-opt %s --split-input-file --hkt-nvvm-lower-gemm | FileCheck %s

// C (100 x 72) += A (100 x 40) B (40 x 72): one kernel gemm_bf16_MxNxK_I
// of 4-warp blocks, 2 x 2 blocks of 64 x 64 (sizes not multiples of the
// tiles), A's 64 x 32 and B's 32 x 64 tiles staged as bf16 in shared memory
// (rows padded by 8 elements) per step of 32 along K (zero past the
// edges), ldmatrix x4 for A and x2.trans for B, eight m16n8k16 mma per
// 16 of K, barriers around the stage, C read and written once at the end.
// CHECK-LABEL: func.func @gemm
// CHECK-SAME: (%[[A:.+]]: memref<100x40xf32>, %[[B:.+]]: memref<40x72xf32>, %[[C:.+]]: memref<100x72xf32>)
// CHECK-NOT: linalg.matmul
// CHECK: gpu.launch blocks(%[[BX:.+]], %[[BY:.+]], %{{.+}}) in (%{{.+}} = %c2{{.*}}, %{{.+}} = %c2{{.*}}, %{{.+}} = %c1{{.*}}) threads(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %c128{{.*}}, %{{.+}} = %c1{{.*}}, %{{.+}} = %c1{{.*}}) function(@gemm_bf16_100x72x40_0)
// CHECK-DAG: %[[AT:.+]] = memref.alloca() : memref<64x40xbf16, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[BT:.+]] = memref.alloca() : memref<32x72xbf16, #gpu.address_space<workgroup>>
// CHECK: scf.for %[[K0:.+]] = %c0{{.*}} to %c40{{.*}} step %c32{{.*}} iter_args(
// CHECK: memref.load %[[A]]
// CHECK: arith.select
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: memref.store %{{.+}}, %[[AT]]
// CHECK: memref.load %[[B]]
// CHECK: memref.store %{{.+}}, %[[BT]]
// CHECK: gpu.barrier
// CHECK: nvgpu.ldmatrix %[[AT]]{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.ldmatrix %[[BT]]{{.*}} {numTiles = 2 : i32, transpose = true}
// CHECK: nvgpu.mma.sync
// CHECK-COUNT-15: nvgpu.mma.sync
// CHECK-NOT: nvgpu.mma.sync
// CHECK: gpu.barrier
// CHECK: scf.yield
// CHECK: memref.load %[[C]]
// CHECK: memref.store %{{.+}}, %[[C]]
// CHECK: gpu.terminator
func.func @gemm(%a: memref<100x40xf32>, %b: memref<40x72xf32>, %c: memref<100x72xf32>) {
  linalg.matmul ins(%a, %b : memref<100x40xf32>, memref<40x72xf32>) outs(%c : memref<100x72xf32>)
  return
}

// -----

// Views (a subview of a stacked weight) are read through their layout;
// the kernels of one module are numbered in order.
// CHECK-LABEL: func.func @views
// CHECK: gpu.launch {{.*}} function(@gemm_bf16_16x32x32_0)
// CHECK: gpu.launch {{.*}} function(@gemm_bf16_16x32x32_1)
func.func @views(%a: memref<16x32xf32>, %w: memref<3x32x32xf32>, %c: memref<16x32xf32>, %d: memref<16x32xf32>) {
  %w1 = memref.subview %w[1, 0, 0] [1, 32, 32] [1, 1, 1] : memref<3x32x32xf32> to memref<32x32xf32, strided<[32, 1], offset: 1024>>
  linalg.matmul ins(%a, %w1 : memref<16x32xf32>, memref<32x32xf32, strided<[32, 1], offset: 1024>>) outs(%c : memref<16x32xf32>)
  linalg.matmul ins(%c, %w1 : memref<16x32xf32>, memref<32x32xf32, strided<[32, 1], offset: 1024>>) outs(%d : memref<16x32xf32>)
  return
}

// -----

// A projection: C is a fresh buffer zero-filled for the product. The fill
// is absorbed (no fill, C written once, never read); a fill of another
// value, or a C read between fill and product, keeps both.
// CHECK-LABEL: func.func @absorbed_fill
// CHECK: %[[C:.+]] = memref.alloc()
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch {{.*}} function(@gemm_bf16_16x32x32_0)
// CHECK: scf.yield
// CHECK-NOT: memref.load %[[C]]
// CHECK: memref.store %{{.+}}, %[[C]]
// CHECK: gpu.terminator
// CHECK-LABEL: func.func @kept_fills
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[C1:.+]] : memref<16x32xf32>)
// CHECK: gpu.launch {{.*}} function(@gemm_bf16_16x32x32_1)
// CHECK: scf.yield
// CHECK: memref.load %[[C1]]
// CHECK: linalg.fill
// CHECK: memref.copy
// CHECK: gpu.launch {{.*}} function(@gemm_bf16_16x32x32_2)
// CHECK: scf.yield
// CHECK: memref.load
func.func @absorbed_fill(%a: memref<16x32xf32>, %w: memref<32x32xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<16x32xf32>)
  linalg.matmul ins(%a, %w : memref<16x32xf32>, memref<32x32xf32>) outs(%c : memref<16x32xf32>)
  return %c : memref<16x32xf32>
}
func.func @kept_fills(%a: memref<16x32xf32>, %w: memref<32x32xf32>, %out: memref<16x32xf32>) -> memref<16x32xf32> {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%one : f32) outs(%c : memref<16x32xf32>)
  linalg.matmul ins(%a, %w : memref<16x32xf32>, memref<32x32xf32>) outs(%c : memref<16x32xf32>)
  %d = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%d : memref<16x32xf32>)
  memref.copy %d, %out : memref<16x32xf32> to memref<16x32xf32>
  linalg.matmul ins(%a, %w : memref<16x32xf32>, memref<32x32xf32>) outs(%d : memref<16x32xf32>)
  return %c : memref<16x32xf32>
}

// -----

// A dynamic M (a dynamic sequence length): the same kernel, its grid and
// its bounds read from the operands at run time, "d" for M in its name.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK: %[[M:.+]] = memref.dim %{{.+}}, %c0 : memref<?x8xf32>
// CHECK: %[[ROWBLOCKS:.+]] = arith.ceildivui %[[M]], %c64
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %{{.+}}, {{.*}} = %[[ROWBLOCKS]], {{.*}}) {{.*}} function(@gemm_bf16_dx8x8_0)
// CHECK: arith.cmpi ult, %{{.+}}, %[[M]]
// CHECK-NOT: linalg.matmul
func.func @dynamic_rows(%a: memref<?x8xf32>, %b: memref<8x8xf32>, %c: memref<?x8xf32>) {
  linalg.matmul ins(%a, %b : memref<?x8xf32>, memref<8x8xf32>) outs(%c : memref<?x8xf32>)
  return
}

// -----

// What the kernel does not cover keeps the element-wise path: f64,
// matmuls on tensors.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: gpu.launch
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : memref<8x8xf64>, memref<8x8xf64>)
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<8x8xf32>, tensor<8x8xf32>)
func.func @untouched(%d: memref<8x8xf64>, %e: memref<8x8xf64>,
                     %t: tensor<8x8xf32>) -> tensor<8x8xf32> {
  linalg.matmul ins(%d, %d : memref<8x8xf64>, memref<8x8xf64>) outs(%e : memref<8x8xf64>)
  %r = linalg.matmul ins(%t, %t : tensor<8x8xf32>, tensor<8x8xf32>) outs(%t : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// RUN: hkt-opt %s --split-input-file --hkt-nvvm-lower-gemm="cublas-lt=1" | FileCheck %s --check-prefix=LT
// With cublas-lt: the runtime's cuBLASLt GEMM first (declared once, marked
// hkt.device_call, on fully dynamic views), the kernel only where it
// returns 0.
// LT-LABEL: func.func private @hktCublasLtGemmBf16(memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> i32 attributes {hkt.device_call}
// LT-LABEL: func.func @with_cublas
// LT: %[[A:.+]] = memref.cast %{{.+}} : memref<16x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// LT: %[[DONE:.+]] = call @hktCublasLtGemmBf16(%[[A]], %{{.+}}, %{{.+}})
// LT: %[[MISSING:.+]] = arith.cmpi eq, %[[DONE]], %c0_i32
// LT: scf.if %[[MISSING]] {
// LT: gpu.launch {{.*}} function(@gemm_bf16_16x8x32_0)
// LT-NOT: call @hktCublasLtGemmBf16
func.func @with_cublas(%a: memref<16x32xf32>, %b: memref<32x8xf32>, %c: memref<16x8xf32>) {
  linalg.matmul ins(%a, %b : memref<16x32xf32>, memref<32x8xf32>) outs(%c : memref<16x8xf32>)
  return
}

// -----

// An absorbed zero fill calls the overwriting form (beta = 0: cuBLASLt
// does not read C).
// LT-LABEL: func.func private @hktCublasLtGemmBf16Overwrite(
// LT-LABEL: func.func @with_cublas_overwrite
// LT-NOT: linalg.fill
// LT: call @hktCublasLtGemmBf16Overwrite(
// LT: gpu.launch {{.*}} function(@gemm_bf16_16x8x32_0)
func.func @with_cublas_overwrite(%a: memref<16x32xf32>, %b: memref<32x8xf32>) -> memref<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<16x8xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<16x8xf32>)
  linalg.matmul ins(%a, %b : memref<16x32xf32>, memref<32x8xf32>) outs(%c : memref<16x8xf32>)
  return %c : memref<16x8xf32>
}
