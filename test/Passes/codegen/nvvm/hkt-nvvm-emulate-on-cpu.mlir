// RUN: hkt-opt %s --split-input-file --verify-diagnostics --hkt-nvvm-lower-bf16-mma --hkt-nvvm-emulate-on-cpu | FileCheck %s

// A launch of 3 x 2 blocks of 64 threads: a private function of its own
// (named for the kernel), called where the launch was; in it the blocks one
// scf.parallel, each with its own heap copy of the workgroup buffer, the
// block's threads one loop up to the barrier and one after it (the thread
// index of each, its loop's index); the device buffers host buffers.
// CHECK-LABEL: func.func @launch
// CHECK-SAME: (%[[X:.+]]: memref<384xf32>)
// CHECK: %[[D:.+]] = memref.alloc() : memref<384xf32>
// CHECK: memref.copy %[[X]], %[[D]]
// CHECK: call @kernel(%[[D]]) : (memref<384xf32>) -> ()
// CHECK: memref.copy %[[D]], %[[X]]
// CHECK: memref.dealloc %[[D]]
// CHECK: func.func private @kernel(
// CHECK: arith.muli
// CHECK: %[[N:.+]] = arith.muli
// CHECK: scf.parallel (%{{.+}}, %{{.+}}, %{{.+}}) = {{.*}} to (%c1{{.*}}, %c2{{.*}}, %c3{{.*}})
// CHECK: %[[SH:.+]] = memref.alloc() : memref<64xf32>
// CHECK: scf.for %[[T:.+]] = %{{.+}} to %[[N]] step
// CHECK: %[[TX:.+]] = arith.remui %[[T]], %c64
// CHECK: memref.store %{{.+}}, %[[SH]][%[[TX]]]
// CHECK-NEXT: }
// CHECK-NEXT: scf.for %[[T2:.+]] = %{{.+}} to %[[N]] step
// CHECK: %[[TX2:.+]] = arith.remui %[[T2]], %c64
// CHECK: arith.subi %c63{{.*}}, %[[TX2]]
// CHECK: memref.load %[[SH]]
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<384xf32>
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[SH]]
// CHECK-NOT: omp.
// CHECK-NOT: gpu.
// CHECK-NOT: omp_get_thread_num
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
// CHECK: scf.parallel
// CHECK: scf.for %[[T:.+]] =
//   Only lane 0 touches a fragment: one per warp, at (thread / 32) x its size.
// CHECK-DAG: arith.divui %[[T]], %c32
// CHECK-DAG: %[[A:.+]] = memref.view %{{.+}}[%{{.+}}][] : memref<?xi8> to memref<16x8xf32>
// CHECK-DAG: %[[B:.+]] = memref.view %{{.+}}[%{{.+}}][] : memref<?xi8> to memref<8x16xf32>
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

// Launches whose bodies are the same op for op (the same kernel at two
// places, on buffers of one type) are emulated once: both calls go to the
// first kernel's function; a launch whose body differs (its constant) keeps
// its own.
// CHECK-LABEL: func.func @same_kernel_twice
// CHECK: call @scale(%{{.+}}) : (memref<128xf32>) -> ()
// CHECK-NEXT: call @scale(%{{.+}}) : (memref<128xf32>) -> ()
// CHECK-NEXT: call @scale_0(%{{.+}}) : (memref<128xf32>) -> ()
// CHECK-NOT: call
// CHECK: func.func private @scale_0(
// CHECK: arith.constant 3.0
// CHECK: func.func private @scale(
// CHECK: arith.constant 2.0
// CHECK-NOT: func.func private @scale
func.func @same_kernel_twice(%x: memref<128xf32>, %y: memref<128xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %c32 : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %x[%i] : memref<128xf32>
    %two = arith.constant 2.0 : f32
    %w = arith.mulf %v, %two : f32
    memref.store %w, %x[%i] : memref<128xf32>
    gpu.terminator
  } {function = @scale}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %c32 : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %y[%i] : memref<128xf32>
    %two = arith.constant 2.0 : f32
    %w = arith.mulf %v, %two : f32
    memref.store %w, %y[%i] : memref<128xf32>
    gpu.terminator
  } {function = @scale}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %c32 : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %y[%i] : memref<128xf32>
    %three = arith.constant 3.0 : f32
    %w = arith.mulf %v, %three : f32
    memref.store %w, %y[%i] : memref<128xf32>
    gpu.terminator
  } {function = @scale}
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
// CHECK: func.func private @kernel
// CHECK: %[[X:.+]] = memref.alloc(%{{.+}}) : memref<2x?x10xi32>
// CHECK: scf.for %[[T:.+]] =
// CHECK: %[[TOGGLE:.+]] = memref.view %{{.+}} : memref<?xi8> to memref<index>
// CHECK: %[[S0:.+]] = memref.load %[[TOGGLE]][]
// CHECK: memref.store %{{.+}}, %[[X]][%[[S0]], %[[T]], %{{.+}}]
// CHECK: }
// CHECK-NEXT: scf.for %[[T1:.+]] =
// CHECK: memref.load %[[X]][
// CHECK: arith.bitcast %{{.+}} : bf16 to i16
// CHECK: vector.from_elements {{.*}} : vector<4x2xi16>
// CHECK: vector.bitcast %{{.+}} : vector<4x2xi16> to vector<4x2xbf16>
// CHECK: }
// CHECK-NEXT: scf.for
// CHECK: vector.bitcast %{{.+}} : vector<2x2xi16> to vector<2x2xbf16>
// CHECK-COUNT-10: memref.store %{{.+}}, %[[X]][%{{.+}}, %{{.+}}, %{{.+}}]
// CHECK-NEXT: }
// CHECK-NEXT: scf.for
// CHECK: scf.for %{{.+}} = %{{.+}} to %c16{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK: arith.shli %{{.+}}, %c16_i32
// CHECK: arith.andi %{{.+}}, %c-65536_i32
// CHECK: math.fma
// CHECK: llvm.insertvalue
// CHECK: }
// CHECK-NEXT: scf.for
// CHECK: arith.xori
// CHECK-NOT: nvvm.mma.sync
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
// CHECK: memref.alloc() : memref<4x24xbf16, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK-COUNT-8: memref.load %{{.+}} : memref<4x16xbf16>
// CHECK-NOT: memref.load %{{.+}} : memref<4x16xbf16>
// CHECK: arith.select
// CHECK: }
// CHECK-NEXT: scf.for
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

// -----

// A barrier inside a loop: the loop runs once for the block, between the
// thread loops of its body. Its bound, loaded by every thread, is thread
// 0's, checked against every other thread's (cf.assert); the value it
// carries is each thread's, through a per-thread row of the f32 buffer
// (stored before the loop and at the end of each iteration, loaded at the
// start of each and after it).
// CHECK-LABEL: func.func @uniform_loop
// CHECK: func.func private @kernel
// CHECK-DAG: %[[IDX:.+]] = memref.alloc(%{{.+}}, %{{.+}}) {alignment = 64 : i64} : memref<?x?xindex>
// CHECK-DAG: %[[F:.+]] = memref.alloc(%{{.+}}, %{{.+}}) {alignment = 64 : i64} : memref<?x?xf32>
// CHECK: scf.for %[[T:.+]] =
// CHECK: %[[UBT:.+]] = memref.load %{{.+}}[] : memref<index>
// CHECK: memref.store %[[UBT]], %[[IDX]][%{{.+}}, %[[T]]]
// CHECK: %[[FIRST:.+]] = memref.load %[[IDX]][%{{.+}}, %c0{{.*}}]
// CHECK: %[[SAME:.+]] = arith.cmpi eq, %[[UBT]], %[[FIRST]]
// CHECK: cf.assert %[[SAME]], "gpu-emulation: the threads of a block of kernel kernel disagree on a loop bound or branch condition around a barrier"
// CHECK: memref.store %{{.+}}, %[[F]][%{{.+}}, %[[T]]]
// CHECK-NEXT: }
// CHECK: %[[UB:.+]] = memref.load %[[IDX]][%{{.+}}, %c0{{.*}}]
// CHECK-NEXT: scf.for %{{.+}} = %{{.+}} to %[[UB]] step %{{.+}} {
// CHECK-NEXT: scf.for %[[T1:.+]] =
// CHECK: %[[ACC:.+]] = memref.load %[[F]][%{{.+}}, %[[T1]]]
// CHECK: memref.store %[[ACC]], %{{.+}} : memref<64xf32>
// CHECK-NEXT: }
// CHECK-NEXT: scf.for %[[T2:.+]] =
// CHECK: %[[ACC2:.+]] = memref.load %[[F]][%{{.+}}, %[[T2]]]
// CHECK: %[[SUM:.+]] = arith.addf %[[ACC2]], %{{.+}}
//   (kept past the second barrier, to be carried in the loop after it)
// CHECK: memref.store %[[SUM]], %[[F]][%{{.+}}, %[[T2]]]
// CHECK-NEXT: }
// CHECK-NEXT: scf.for %[[T4:.+]] =
// CHECK: memref.store %{{.+}}, %[[F]][%{{.+}}, %[[T4]]]
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: scf.for %[[T3:.+]] =
// CHECK: %[[R:.+]] = memref.load %[[F]][%{{.+}}, %[[T3]]]
// CHECK: memref.store %[[R]], %{{.+}} : memref<64xf32>
// CHECK-DAG: memref.dealloc %[[IDX]]
// CHECK-DAG: memref.dealloc %[[F]]
func.func @uniform_loop(%x: memref<64xf32>, %n: memref<index>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)
             workgroup(%sh : memref<64xf32, #gpu.address_space<workgroup>>) {
    %init = memref.load %x[%tx] : memref<64xf32>
    %ub = memref.load %n[] : memref<index>
    %r = scf.for %i = %c0 to %ub step %c1 iter_args(%acc = %init) -> (f32) {
      memref.store %acc, %sh[%tx] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %j = arith.subi %c63, %tx : index
      %v = memref.load %sh[%j] : memref<64xf32, #gpu.address_space<workgroup>>
      %s = arith.addf %acc, %v : f32
      gpu.barrier
      scf.yield %s : f32
    }
    memref.store %r, %x[%tx] : memref<64xf32>
    gpu.terminator
  }
  return
}

// -----

// A branch around a barrier is taken once for the block; its condition
// here depends only on the block (recomputed there, nothing to check) and
// its result goes through a per-thread row.
// CHECK-LABEL: func.func @uniform_branch
// CHECK: func.func private @kernel
// CHECK: scf.parallel (%{{.+}}, %{{.+}}, %[[BX:.+]]) =
// CHECK: %[[F:.+]] = memref.alloc(%{{.+}}, %{{.+}}) {alignment = 64 : i64} : memref<?x?xf32>
// CHECK: scf.for
// CHECK: }
// CHECK-NEXT: %[[C:.+]] = arith.cmpi eq, %[[BX]], %c0
// CHECK-NEXT: scf.if %[[C]] {
// CHECK: scf.for %[[T:.+]] =
// CHECK: memref.store %{{.+}}, %[[F]][%{{.+}}, %[[T]]]
// CHECK: } else {
// CHECK: scf.for %[[T2:.+]] =
// CHECK: memref.store %{{.+}}, %[[F]][%{{.+}}, %[[T2]]]
// CHECK-NOT: cf.assert
func.func @uniform_branch(%x: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)
             workgroup(%sh : memref<64xf32, #gpu.address_space<workgroup>>) {
    %base = arith.muli %bx, %c64 : index
    %i = arith.addi %base, %tx : index
    %first = arith.cmpi eq, %bx, %c0 : index
    %r = scf.if %first -> (f32) {
      memref.store %one, %sh[%tx] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %v = memref.load %sh[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
      scf.yield %v : f32
    } else {
      %v = memref.load %x[%i] : memref<128xf32>
      gpu.barrier
      scf.yield %v : f32
    }
    memref.store %r, %x[%i] : memref<128xf32>
    gpu.terminator
  }
  return
}

// -----

// A barrier reached through other control flow: refused.
func.func @barrier_in_while(%x: memref<64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    // expected-error @below {{reaches a barrier; the emulation forms thread loops only around scf.for and scf.if}}
    %r = scf.while (%i = %c0) : (index) -> index {
      %go = arith.cmpi ult, %i, %n : index
      scf.condition(%go) %i : index
    } do {
    ^bb0(%j: index):
      gpu.barrier
      %k = arith.addi %j, %c1 : index
      scf.yield %k : index
    }
    gpu.terminator
  }
  return
}
