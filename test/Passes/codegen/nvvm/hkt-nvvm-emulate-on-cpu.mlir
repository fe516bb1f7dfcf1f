// RUN: hkt-opt %s --split-input-file --verify-diagnostics --hkt-nvvm-lower-bf16-mma --hkt-nvvm-emulate-on-cpu | FileCheck %s

// A launch of 3 x 2 blocks of 64 threads: a private function of its own
// (named for the kernel), called where the launch was; in it the blocks one
// after another, each an OpenMP team of exactly 64 threads whose ids come
// from omp_get_thread_num, the barrier an omp.barrier, the workgroup buffer
// one stack buffer for all blocks, the device buffers host buffers.
// CHECK-LABEL: func.func @launch
// CHECK-SAME: (%[[X:.+]]: memref<384xf32>)
// CHECK: %[[D:.+]] = memref.alloc() : memref<384xf32>
// CHECK: memref.copy %[[X]], %[[D]]
// CHECK: call @kernel(%[[D]]) : (memref<384xf32>) -> ()
// CHECK: memref.copy %[[D]], %[[X]]
// CHECK: memref.dealloc %[[D]]
// CHECK: func.func private @kernel(
// CHECK: %[[SH:.+]] = memref.alloca() : memref<64xf32>
// CHECK: scf.for %{{.+}} = %{{.+}} to %c1{{.*}} step
// CHECK: scf.for %[[BY:.+]] = %{{.+}} to %c2{{.*}} step
// CHECK: scf.for %[[BX:.+]] = %{{.+}} to %c3{{.*}} step
// CHECK: %[[N:.+]] = arith.index_cast %{{.+}} : index to i32
// CHECK: omp.parallel num_threads(%[[N]] : i32) {
// CHECK: %[[TID:.+]] = func.call @omp_get_thread_num() : () -> i32
// CHECK: memref.store %{{.+}}, %[[SH]]
// CHECK: omp.barrier
// CHECK: memref.load %[[SH]]
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<384xf32>
// CHECK: omp.terminator
// CHECK-NOT: gpu.
// CHECK: func.func private @omp_get_thread_num() -> i32
func.func @launch(%x: memref<384xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c64 = arith.constant 64 : index
  %c63 = arith.constant 63 : index
  %d = gpu.alloc () : memref<384xf32>
  gpu.memcpy %d, %x : memref<384xf32>, memref<384xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c2, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)
             workgroup(%sh : memref<64xf32, #gpu.address_space<workgroup>>) {
    %block = arith.addi %bx, %by : index
    %base = arith.muli %block, %c64 : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %d[%i] : memref<384xf32>
    memref.store %v, %sh[%tx] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    // Each thread reads its neighbour's element: right only after the barrier.
    %j = arith.subi %c63, %tx : index
    %w = memref.load %sh[%j] : memref<64xf32, #gpu.address_space<workgroup>>
    memref.store %w, %d[%i] : memref<384xf32>
    gpu.terminator
  }
  gpu.memcpy %x, %d : memref<384xf32>, memref<384xf32>
  gpu.dealloc %d : memref<384xf32>
  return
}

// -----

// Warp-level matrix ops: run by lane 0 of each warp on whole fragments in
// private buffers, the operands rounded to tf32 (the low 13 mantissa bits
// dropped: and with 0xFFFFE000).
// CHECK-LABEL: func.func @mma
// CHECK: omp.parallel
// CHECK-DAG: %[[A:.+]] = memref.alloca() : memref<16x8xf32>
// CHECK-DAG: %[[B:.+]] = memref.alloca() : memref<8x16xf32>
// CHECK: %[[ZERO:.+]] = arith.cmpi eq, %{{.+}}, %c0
// CHECK: scf.if %[[ZERO]] {
// CHECK: memref.store %{{.+}}, %[[A]]
// CHECK: scf.if %[[ZERO]] {
//   B loaded transposed: element (k, n) from row n, column k.
// CHECK: memref.store %{{.+}}, %[[B]]
// CHECK: scf.if %[[ZERO]] {
// CHECK: arith.constant -8192 : i32
// CHECK: arith.andi
// CHECK: math.fma
// CHECK: scf.if %[[ZERO]] {
// CHECK-NOT: gpu.subgroup_mma
func.func @mma(%a: memref<16x8xf32>, %b: memref<16x8xf32>, %c: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %fa = gpu.subgroup_mma_load_matrix %a[%c0, %c0] {leadDimension = 8 : index} : memref<16x8xf32> -> !gpu.mma_matrix<16x8xf32, "AOp">
    %fb = gpu.subgroup_mma_load_matrix %b[%c0, %c0] {leadDimension = 8 : index, transpose} : memref<16x8xf32> -> !gpu.mma_matrix<8x16xf32, "BOp">
    %fc = gpu.subgroup_mma_load_matrix %c[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf32> -> !gpu.mma_matrix<16x16xf32, "COp">
    %r = gpu.subgroup_mma_compute %fa, %fb, %fc {b_transpose} : !gpu.mma_matrix<16x8xf32, "AOp">, !gpu.mma_matrix<8x16xf32, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
    gpu.subgroup_mma_store_matrix %r, %c[%c0, %c0] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x16xf32>
    gpu.terminator
  }
  return
}

// -----

// A fragment whose rows are not the memref's rows cannot be emulated by
// indexing (the kernels never load one).
func.func @strided_fragment(%a: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{is emulated only with leadDimension equal to the row length of an identity-layout memref}}
    %fa = gpu.subgroup_mma_load_matrix %a[%c0, %c0] {leadDimension = 8 : index} : memref<16x16xf32> -> !gpu.mma_matrix<16x8xf32, "AOp">
    gpu.terminator
  }
  return
}

// -----

// No barrier, no workgroup memory, no warp-level op: the threads are
// independent, one scf.parallel over blocks and threads.
// CHECK-LABEL: func.func @independent
// CHECK-NOT: omp.parallel
// CHECK: scf.parallel (%{{.+}}, %{{.+}}, %[[BX:.+]], %{{.+}}, %{{.+}}, %[[TX:.+]]) = {{.*}} to (%c1{{.*}}, %c1{{.*}}, %c4{{.*}}, %c1{{.*}}, %c1{{.*}}, %c32{{.*}})
// CHECK: arith.muli %[[BX]], %c32
// CHECK: memref.store
func.func @independent(%x: memref<128xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %c32 : index
    %i = arith.addi %base, %tx : index
    memref.store %one, %x[%i] : memref<128xf32>
    gpu.terminator
  }
  return
}

// -----

// The bf16 kernels' warp-level ops, per lane (after hkt-nvvm-lower-bf16-mma,
// as the pipeline runs them): each op puts the lane's words (ldmatrix: its
// row address; mma.sync: its A, B and C registers; shuffle: its value) in
// one of the two slots of the team's exchange buffer (2 x threads x 10
// words), taken in turn, meets the team at one omp.barrier, and builds the
// lane's own result from other lanes' words: ldmatrix reads each matrix's
// row address from lane 8 m + lane / 4; mma.sync sums over k = 0..15 the
// bf16 halves (shifted into f32) of A's and B's registers by the PTX ISA's
// fragment maps; the shuffle reads lane ^ offset.
// CHECK-LABEL: func.func @warp_ops
// CHECK: %[[X:.+]] = memref.alloca(%{{.+}}) : memref<2x?x10xi32>
// CHECK: omp.parallel
// CHECK: %[[TOGGLE:.+]] = memref.alloca() : memref<index>
// CHECK: %[[S0:.+]] = memref.load %[[TOGGLE]][]
// CHECK: memref.store %{{.+}}, %[[X]][%[[S0]], %{{.+}}, %{{.+}}]
// CHECK: omp.barrier
// CHECK: memref.load %[[X]][%[[S0]],
// CHECK: arith.bitcast %{{.+}} : bf16 to i16
// CHECK: vector.from_elements {{.*}} : vector<4x2xi16>
// CHECK: vector.bitcast %{{.+}} : vector<4x2xi16> to vector<4x2xbf16>
// CHECK: omp.barrier
// CHECK: vector.bitcast %{{.+}} : vector<2x2xi16> to vector<2x2xbf16>
// CHECK: %[[S2:.+]] = memref.load %[[TOGGLE]][]
// CHECK-COUNT-10: memref.store %{{.+}}, %[[X]][%[[S2]], %{{.+}}, %{{.+}}]
// CHECK: omp.barrier
// CHECK: scf.for %{{.+}} = %{{.+}} to %c16{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK: arith.shli %{{.+}}, %c16_i32
// CHECK: arith.andi %{{.+}}, %c-65536_i32
// CHECK: math.fma
// CHECK: llvm.insertvalue
// CHECK-NOT: nvvm.mma.sync
// CHECK: omp.barrier
// CHECK: arith.xori
// CHECK-NOT: gpu.shuffle
// CHECK-NOT: nvgpu.ldmatrix
func.func @warp_ops(%out: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) workgroup(%tile : memref<16x16xbf16, #gpu.address_space<workgroup>>) {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %row = arith.remui %tx, %c16 : index
    %a = nvgpu.ldmatrix %tile[%row, %c0] {numTiles = 4 : i32, transpose = false} : memref<16x16xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
    %b = nvgpu.ldmatrix %tile[%row, %c0] {numTiles = 2 : i32, transpose = true} : memref<16x16xbf16, #gpu.address_space<workgroup>> -> vector<2x2xbf16>
    %z = arith.constant dense<0.0> : vector<2x2xf32>
    %d = nvgpu.mma.sync(%a, %b, %z) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %x = vector.extract %d[0, 0] : f32 from vector<2x2xf32>
    %one = arith.constant 1 : i32
    %width = arith.constant 32 : i32
    %y, %valid = gpu.shuffle xor %x, %one, %width : f32
    memref.store %y, %out[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// Shuffles other than a full-warp xor are not emulated: an error, not a
// silent wrong answer.
func.func @shuffle_down(%out: memref<32xf32>, %v: f32) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %one = arith.constant 1 : i32
    %width = arith.constant 32 : i32
    // expected-error @below {{is emulated only as a 32-bit xor shuffle over the whole warp}}
    %y, %valid = gpu.shuffle down %v, %one, %width : f32
    memref.store %y, %out[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// cp.async: each thread copies its 8 elements itself, at once (the next
// barrier still orders them before their readers): element i from the
// source where i < srcElements, else zero. Groups and waits go.
// CHECK-LABEL: func.func @async_copy
// CHECK: omp.parallel
// CHECK-COUNT-8: memref.load %{{.+}} : memref<4x16xbf16>
// CHECK-NOT: memref.load %{{.+}} : memref<4x16xbf16>
// CHECK: arith.select
// CHECK: omp.barrier
// CHECK-NOT: nvgpu.device_async
func.func @async_copy(%src: memref<4x16xbf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1)
             threads(%tx, %ty, %tz) in (%u = %c2, %v = %c1, %w = %c1) {
    %tile = memref.alloca() : memref<4x24xbf16, #gpu.address_space<workgroup>>
    %col = arith.muli %tx, %c1 : index
    %t = nvgpu.device_async_copy %src[%tx, %c0], %tile[%tx, %c0], 8, %n {bypassL1} : memref<4x16xbf16> to memref<4x24xbf16, #gpu.address_space<workgroup>>
    %g = nvgpu.device_async_create_group %t
    nvgpu.device_async_wait %g {numGroups = 0 : i32}
    gpu.barrier
    %x0 = memref.load %tile[%c1, %c0] : memref<4x24xbf16, #gpu.address_space<workgroup>>
    memref.store %x0, %src[%tx, %c1] : memref<4x16xbf16>
    gpu.terminator
  }
  return
}
