// RUN: hkt-opt %s --split-input-file --hkt-nvvm-map-parallel-loops | FileCheck %s
// RUN: hkt-opt %s --split-input-file --hkt-nvvm-map-parallel-loops="block-size=128" | FileCheck %s --check-prefix=B128
// RUN: not hkt-opt %s --hkt-nvvm-map-parallel-loops="block-size=100" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: block-size must be a multiple of 32 in [32, 1024]

// A rank-3 loop of 2 x 100 x 64 = 12800 iterations with a reduction inside:
// 50 blocks of 256 threads, the innermost index fastest, the body (and its
// scf.for) cloned once into the guarded kernel.
// CHECK-LABEL: func.func @rank3
// CHECK-SAME: (%[[A:.+]]: memref<2x100x32xf32>, %[[W:.+]]: memref<32x64xf32>, %[[Y:.+]]: memref<2x100x64xf32>)
// CHECK-NOT: scf.parallel
// CHECK: gpu.launch blocks(%[[BX:[^,]+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %c50, %{{.+}} = %c1{{.*}}, %{{.+}} = %c1{{.*}}) threads(%[[TX:[^,]+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %c256
// CHECK: %[[BASE:.+]] = arith.muli %[[BX]], %c256
// CHECK: %[[ID:.+]] = arith.addi %[[BASE]], %[[TX]]
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[ID]], %c12800
// CHECK: scf.if %[[IN]] {
// CHECK: %[[N:.+]] = arith.remui %[[ID]], %c64
// CHECK: %[[R1:.+]] = arith.divui %[[ID]], %c64
// CHECK: %[[T:.+]] = arith.remui %[[R1]], %c100
// CHECK: %[[B:.+]] = arith.divui %[[R1]], %c100
// CHECK: scf.for
// CHECK: memref.store %{{.+}}, %[[Y]][%{{.+}}, %{{.+}}, %{{.+}}]
// CHECK: gpu.terminator
// B128-LABEL: func.func @rank3
// B128: gpu.launch blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %c100{{.*}}, {{.*}} threads(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %c128
func.func @rank3(%a: memref<2x100x32xf32>, %w: memref<32x64xf32>, %y: memref<2x100x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c100 = arith.constant 100 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%b, %t, %n) = (%c0, %c0, %c0) to (%c2, %c100, %c64) step (%c1, %c1, %c1) {
    %sum = scf.for %k = %c0 to %c32 step %c1 iter_args(%acc = %zero) -> f32 {
      %x = memref.load %a[%b, %t, %k] : memref<2x100x32xf32>
      %v = memref.load %w[%k, %n] : memref<32x64xf32>
      %p = arith.mulf %x, %v : f32
      %s = arith.addf %acc, %p : f32
      scf.yield %s : f32
    }
    memref.store %sum, %y[%b, %t, %n] : memref<2x100x64xf32>
    scf.reduce
  }
  return
}

// -----

// Dynamic bounds: the grid is computed on the host, and a loop that turns
// out empty launches nothing (a grid of zero blocks is a launch error).
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[X:.+]]: memref<?xf32>, %[[N:.+]]: index)
// CHECK: %[[COUNT:.+]] = arith.ceildivui %[[N]], %c2
// CHECK: %[[BLOCKS:.+]] = arith.ceildivui %[[COUNT]], %c256
// CHECK: %[[ANY:.+]] = arith.cmpi ugt, %[[COUNT]], %c0
// CHECK: scf.if %[[ANY]] {
// CHECK: gpu.launch blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %[[BLOCKS]],
//   Iteration i is element 2 i.
// CHECK: %[[SCALED:.+]] = arith.muli %{{.+}}, %c2 : index
// CHECK: memref.store %{{.+}}, %[[X]][%[[SCALED]]]
func.func @dynamic(%x: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c2) {
    memref.store %one, %x[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// A loop nested in a kernel already is left alone.
// CHECK-LABEL: func.func @inside_kernel
// CHECK: gpu.launch
// CHECK: scf.parallel
func.func @inside_kernel(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
      memref.store %one, %x[%i] : memref<4xf32>
      scf.reduce
    }
    gpu.terminator
  }
  return
}

// -----

// Structured ops: a kernel each, named for what it computes (the
// hkt.kernel tag, else the op's kind) and numbered; a fill and a transpose
// go through linalg-to-parallel-loops, one thread per element.
// CHECK-LABEL: func.func @named
// CHECK: gpu.launch {{.*}} function(@fill_0)
// CHECK: gpu.launch {{.*}} function(@transpose_1)
// CHECK: gpu.launch {{.*}} function(@hybrid_2)
// CHECK: gpu.launch {{.*}} function(@elementwise_3)
// CHECK: gpu.launch {{.*}} function(@loop_4)
// CHECK-NOT: linalg.
#id2 = affine_map<(i, j) -> (i, j)>
func.func @named(%x: memref<8x16xf32>, %y: memref<16x8xf32>, %z: memref<16x8xf32>, %w: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%x : memref<8x16xf32>)
  linalg.transpose ins(%x : memref<8x16xf32>) outs(%y : memref<16x8xf32>) permutation = [1, 0]
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<16x8xf32>) outs(%z : memref<16x8xf32>) attrs = {hkt.kernel = "hybrid"} {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%z : memref<16x8xf32>) outs(%y : memref<16x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.addf %a, %a : f32
    linalg.yield %m : f32
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %one, %w[%i] : memref<4xf32>
    scf.reduce
  }
  return
}

// -----

// A long sum (db[c] = sum over b, t of dy[b, t, c]: 2 x 100 = 200 terms)
// gets a warp per output element: 64 elements, 8 warps a block, 8 blocks;
// lanes stride the terms (the reductions stay inside the kernel though
// they lead the loops), five xor shuffles add the lanes' sums, lane 0 adds
// the total into the output; every warp reaches the shuffles.
// CHECK-LABEL: func.func @warp_sum
// CHECK-SAME: (%[[DY:.+]]: memref<2x100x64xf32>, %[[DB:.+]]: memref<64xf32>)
// CHECK: gpu.launch blocks({{.*}}) in (%{{.+}} = %c8{{.*}}, %{{.+}} = %c1{{.*}}, %{{.+}} = %c1{{.*}}) threads({{.*}}) in (%{{.+}} = %c256{{.*}}) function(@downsample_grad_0)
// CHECK: %[[LANE:.+]] = arith.remui %{{.+}}, %c32
// CHECK: %[[IN:.+]] = arith.cmpi ult, %{{.+}}, %c64
// CHECK: %[[TERMS:.+]] = arith.select %[[IN]], %c200, %c0
// CHECK: %[[PART:.+]] = scf.for %{{.+}} = %[[LANE]] to %[[TERMS]] step %c32{{.*}} iter_args
// CHECK: memref.load %[[DY]]
// CHECK: gpu.shuffle xor %[[PART]], %c16
// CHECK-COUNT-4: gpu.shuffle xor
// CHECK: scf.if
// CHECK: memref.load %[[DB]]
// CHECK: memref.store %{{.+}}, %[[DB]]
#dy = affine_map<(b, t, c) -> (b, t, c)>
#db = affine_map<(b, t, c) -> (c)>
func.func @warp_sum(%dy: memref<2x100x64xf32>, %db: memref<64xf32>) {
  linalg.generic {indexing_maps = [#dy, #db], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%dy : memref<2x100x64xf32>) outs(%db : memref<64xf32>) attrs = {hkt.kernel = "downsample_grad"} {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The same sum over a dynamic sequence (a module for every length): a
// warp per output element still, the term count read at run time
// (2 x T), not a thread looping over B x T terms.
// CHECK-LABEL: func.func @dynamic_warp_sum
// CHECK-SAME: (%[[DY:.+]]: memref<2x?x64xf32>, %[[DB:.+]]: memref<64xf32>)
// CHECK: %[[T:.+]] = memref.dim %[[DY]], %c1
// CHECK: %[[N:.+]] = arith.muli %[[T]], %c2
// CHECK: gpu.launch blocks({{.*}}) in (%{{.+}} = %c8{{.*}}, {{.*}} function(@downsample_grad_0)
// CHECK: %[[LANE:.+]] = arith.remui %{{.+}}, %c32
// CHECK: %[[TERMS:.+]] = arith.select %{{.+}}, %[[N]], %c0
// CHECK: scf.for %{{.+}} = %[[LANE]] to %[[TERMS]] step %c32{{.*}} iter_args
// CHECK: arith.remui %{{.+}}, %[[T]]
// CHECK-COUNT-5: gpu.shuffle xor
#dyd = affine_map<(b, t, c) -> (b, t, c)>
#dbd = affine_map<(b, t, c) -> (c)>
func.func @dynamic_warp_sum(%dy: memref<2x?x64xf32>, %db: memref<64xf32>) {
  linalg.generic {indexing_maps = [#dyd, #dbd], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%dy : memref<2x?x64xf32>) outs(%db : memref<64xf32>) attrs = {hkt.kernel = "downsample_grad"} {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A short sum (10 terms) keeps a thread per output element, its reduction
// inside the kernel.
// CHECK-LABEL: func.func @thread_sum
// CHECK: gpu.launch blocks({{.*}}) in (%{{.+}} = %c1{{.*}}, {{.*}} function(@reduce_0)
// CHECK: scf.for %{{.+}} = %c0{{.*}} to %{{.+}} step %c1{{.*}} iter_args
// CHECK-NOT: gpu.shuffle
// CHECK: memref.store
#x2 = affine_map<(t, c) -> (t, c)>
#c1 = affine_map<(t, c) -> (c)>
func.func @thread_sum(%x: memref<10x64xf32>, %y: memref<64xf32>) {
  linalg.generic {indexing_maps = [#x2, #c1], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<10x64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A sum into a fresh buffer zero-filled just for it absorbs the fill: no
// fill kernel, the sum stores its totals without reading the output. A
// buffer read between the fill and the sum keeps both.
// CHECK-LABEL: func.func @absorbed_fill
// CHECK: %[[Y:.+]] = memref.alloc()
// CHECK-NOT: fill
// CHECK: gpu.launch {{.*}} function(@reduce_0)
// CHECK: scf.if
// CHECK-NOT: memref.load %[[Y]]
// CHECK: memref.store %{{.+}}, %[[Y]]
// CHECK: gpu.terminator
// CHECK-LABEL: func.func @kept_fill
// CHECK: gpu.launch {{.*}} function(@fill_1)
// CHECK: gpu.launch {{.*}} function(@reduce_2)
// CHECK: memref.load
// CHECK: memref.store
#xs = affine_map<(t, c) -> (t, c)>
#cs = affine_map<(t, c) -> (c)>
func.func @absorbed_fill(%x: memref<10x64xf32>) -> memref<64xf32> {
  %zero = arith.constant 0.0 : f32
  %y = memref.alloc() : memref<64xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<64xf32>)
  linalg.generic {indexing_maps = [#xs, #cs], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<10x64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  }
  return %y : memref<64xf32>
}
func.func @kept_fill(%x: memref<10x64xf32>, %z: memref<64xf32>) -> memref<64xf32> {
  %zero = arith.constant 0.0 : f32
  %y = memref.alloc() : memref<64xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<64xf32>)
  memref.copy %y, %z : memref<64xf32> to memref<64xf32>
  linalg.generic {indexing_maps = [#xs, #cs], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<10x64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  }
  return %y : memref<64xf32>
}

// -----

// A sum whose output index depends on a reduction loop (d theta: column j
// of the scores belongs to head j / 4) adds each term atomically, a
// thread per term.
// CHECK-LABEL: func.func @atomic_sum
// CHECK: gpu.launch {{.*}} function(@reduce_0)
// CHECK: memref.atomic_rmw addf %{{.+}}, %{{.+}}[%{{.+}}] : (f32, memref<2xf32>) -> f32
#in = affine_map<(i, j) -> (i, j)>
#head = affine_map<(i, j) -> (j floordiv 4)>
func.func @atomic_sum(%x: memref<3x8xf32>, %y: memref<2xf32>) {
  linalg.generic {indexing_maps = [#in, #head], iterator_types = ["reduction", "reduction"]}
      ins(%x : memref<3x8xf32>) outs(%y : memref<2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// No parallel dimension and not a sum (the loss's largest logit over a
// small batch): one thread runs the loop.
// CHECK-LABEL: func.func @scalar_max
// CHECK: arith.constant 5 : index
// CHECK: arith.constant 1 : index
// CHECK: %[[ONE:.+]] = arith.constant 1 : index
// CHECK-NEXT: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) threads({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) function(@reduce_0)
// CHECK: scf.for
// CHECK: arith.maximumf
// CHECK: gpu.terminator
#all = affine_map<(i) -> (i)>
#none = affine_map<(i) -> ()>
func.func @scalar_max(%x: memref<5xf32>, %y: memref<f32>) {
  linalg.generic {indexing_maps = [#all, #none], iterator_types = ["reduction"]}
      ins(%x : memref<5xf32>) outs(%y : memref<f32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %o, %a : f32
    linalg.yield %m : f32
  }
  return
}
