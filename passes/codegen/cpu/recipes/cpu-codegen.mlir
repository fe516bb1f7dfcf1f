// The CPU code-generation recipe of hkt-cpu-codegen (passes/codegen/cpu/CpuCodegen.cpp):
// shared/TOOLCHAIN.md's matmul recipe, retuned on this project's machines,
// as a library of transform-dialect named sequences.
//
// One sequence per class of op; each takes a handle to ONE payload op (the
// pass iterates over the ops of a class with transform.foreach) and its tile
// sizes as !transform.param<i64> arguments. The numbers come from the
// per-target table in passes/codegen/cpu/CpuTuning.cpp; nothing here is tuned. Tile
// sizes divide the op's shape exactly (the pass checks), so every tile is
// static and vectorises. After the ops, @hkt_lower_vectors runs once on every
// function.
//
// The file is embedded into the compiler at build time (passes/CMakeLists.txt)
// and parsed under the name cpu-codegen.mlir, so a mistake here is reported
// at its line. Its lit test, test/Passes/hkt-cpu-codegen-recipe.mlir, runs
// each sequence through `hkt-opt --transform-preload-library
// --transform-interpreter`.
//
// Row-wise sequences come in one variant per rank (@hkt_rows_2d ...): the
// transform dialect of MLIR 22 has no rank-generic form of tile_using_for
// (its tile-size list has a fixed length; only tile_using_forall takes a
// packed list, and scf.forall -> scf.for needs the loop count again).

module attributes {transform.with_named_sequence} {

  // A whole matmul (a projection, outside any loop nest): an scf.forall over
  // blocks of `rows` rows (threads), cache tiles [N cacheN, K cacheK] with
  // the K loop outside N (@hkt_gemm_blocks), then register tiles regM x regN
  // with K steps of regK, visited column panel by column panel (the K x regN
  // panel of the right operand stays in L1 across the rows); vectorised
  // (@hkt_gemm_registers).
  transform.named_sequence @hkt_gemm(
      %mm: !transform.any_op {transform.consumed},
      %rows: !transform.param<i64> {transform.readonly},
      %cacheN: !transform.param<i64> {transform.readonly},
      %cacheK: !transform.param<i64> {transform.readonly},
      %regM: !transform.param<i64> {transform.readonly},
      %regN: !transform.param<i64> {transform.readonly},
      %regK: !transform.param<i64> {transform.readonly}) {
    %cache = transform.include @hkt_gemm_blocks failures(propagate)
        (%mm, %rows, %cacheN, %cacheK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> !transform.any_op
    transform.include @hkt_gemm_registers failures(propagate)
        (%cache, %regM, %regN, %regK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> ()
    transform.yield
  }

  // @hkt_gemm when the rows of a thread block are not a multiple of the
  // register tile's: the block's rows are split after `split` (a multiple
  // of regM), the rest taking register tiles of regM2 rows. 12-accumulator
  // tiles (6 x 16 with AVX2) do not divide 64-row blocks.
  transform.named_sequence @hkt_gemm_split(
      %mm: !transform.any_op {transform.consumed},
      %rows: !transform.param<i64> {transform.readonly},
      %cacheN: !transform.param<i64> {transform.readonly},
      %cacheK: !transform.param<i64> {transform.readonly},
      %regM: !transform.param<i64> {transform.readonly},
      %regN: !transform.param<i64> {transform.readonly},
      %regK: !transform.param<i64> {transform.readonly},
      %split: !transform.param<i64> {transform.readonly},
      %regM2: !transform.param<i64> {transform.readonly}) {
    %cache = transform.include @hkt_gemm_blocks failures(propagate)
        (%mm, %rows, %cacheN, %cacheK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> !transform.any_op
    %parts = transform.structured.split %cache after %split { dimension = 0 }
        : !transform.any_op, !transform.param<i64>
    %main, %rest = transform.split_handle %parts
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.include @hkt_gemm_registers failures(propagate)
        (%main, %regM, %regN, %regK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> ()
    transform.include @hkt_gemm_registers failures(propagate)
        (%rest, %regM2, %regN, %regK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> ()
    transform.yield
  }

  // A whole matmul whose rows are dynamic (a layer compiled for every
  // sequence length): thread blocks and cache tiles as @hkt_gemm (the last
  // block may be short), then column panels of regN and, inside, the rows
  // in register tiles of regM: that loop is peeled, so that its main part
  // holds whole register tiles (static, vectorised as @hkt_gemm's, K in
  // steps of regK) and the rest, fewer than regM rows of a block, stays
  // scalar.
  transform.named_sequence @hkt_gemm_dynamic(
      %mm: !transform.any_op {transform.consumed},
      %rows: !transform.param<i64> {transform.readonly},
      %cacheN: !transform.param<i64> {transform.readonly},
      %cacheK: !transform.param<i64> {transform.readonly},
      %regM: !transform.param<i64> {transform.readonly},
      %regN: !transform.param<i64> {transform.readonly},
      %regK: !transform.param<i64> {transform.readonly}) {
    %cache = transform.include @hkt_gemm_blocks failures(propagate)
        (%mm, %rows, %cacheN, %cacheK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> !transform.any_op
    %panel, %loopN = transform.structured.tile_using_for %cache
        tile_sizes [0, %regN, 0]
        : (!transform.any_op, !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op)
    %rowTile, %loopM = transform.structured.tile_using_for %panel
        tile_sizes [%regM, 0, 0]
        : (!transform.any_op, !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op)
    %rowLoop = transform.cast %loopM
        : !transform.any_op to !transform.op<"scf.for">
    %main, %rest = transform.loop.peel %rowLoop
        : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
    transform.apply_patterns to %main {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %whole = transform.structured.match ops{["linalg.matmul"]} in %main
        : (!transform.any_op) -> !transform.any_op
    %reg, %loopK = transform.structured.tile_using_for %whole
        tile_sizes [0, 0, %regK]
        : (!transform.any_op, !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %reg : !transform.any_op
    transform.yield
  }

  // A whole matmul whose reduction (K) is dynamic: a weight gradient
  // A^T dC summed over a dynamic sequence. Thread blocks and cache tiles as
  // @hkt_gemm; the K loop of the cache tiles is peeled (@hkt_gemm_k_blocks):
  // whole cache tiles take @hkt_gemm's register tiles, the last, shorter
  // one @hkt_gemm_k_rest.
  transform.named_sequence @hkt_gemm_dynamic_k(
      %mm: !transform.any_op {transform.consumed},
      %rows: !transform.param<i64> {transform.readonly},
      %cacheN: !transform.param<i64> {transform.readonly},
      %cacheK: !transform.param<i64> {transform.readonly},
      %regM: !transform.param<i64> {transform.readonly},
      %regN: !transform.param<i64> {transform.readonly},
      %regK: !transform.param<i64> {transform.readonly}) {
    %main, %rest = transform.include @hkt_gemm_k_blocks failures(propagate)
        (%mm, %rows, %cacheN, %cacheK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> (!transform.any_op, !transform.any_op)
    transform.include @hkt_gemm_registers failures(propagate)
        (%main, %regM, %regN, %regK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> ()
    transform.include @hkt_gemm_k_rest failures(propagate)
        (%rest, %regM, %regN)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>)
        -> ()
    transform.yield
  }

  // @hkt_gemm_dynamic_k with the rows of a block split as @hkt_gemm_split.
  transform.named_sequence @hkt_gemm_dynamic_k_split(
      %mm: !transform.any_op {transform.consumed},
      %rows: !transform.param<i64> {transform.readonly},
      %cacheN: !transform.param<i64> {transform.readonly},
      %cacheK: !transform.param<i64> {transform.readonly},
      %regM: !transform.param<i64> {transform.readonly},
      %regN: !transform.param<i64> {transform.readonly},
      %regK: !transform.param<i64> {transform.readonly},
      %split: !transform.param<i64> {transform.readonly},
      %regM2: !transform.param<i64> {transform.readonly}) {
    %main, %rest = transform.include @hkt_gemm_k_blocks failures(propagate)
        (%mm, %rows, %cacheN, %cacheK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> (!transform.any_op, !transform.any_op)
    %mainParts = transform.structured.split %main after %split { dimension = 0 }
        : !transform.any_op, !transform.param<i64>
    %main1, %main2 = transform.split_handle %mainParts
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.include @hkt_gemm_registers failures(propagate)
        (%main1, %regM, %regN, %regK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> ()
    transform.include @hkt_gemm_registers failures(propagate)
        (%main2, %regM2, %regN, %regK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> ()
    %restParts = transform.structured.split %rest after %split { dimension = 0 }
        : !transform.any_op, !transform.param<i64>
    %rest1, %rest2 = transform.split_handle %restParts
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.include @hkt_gemm_k_rest failures(propagate)
        (%rest1, %regM, %regN)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>)
        -> ()
    transform.include @hkt_gemm_k_rest failures(propagate)
        (%rest2, %regM2, %regN)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>)
        -> ()
    transform.yield
  }

  // The blocks and cache tiles of a dynamic-K matmul, the K loop peeled:
  // returns the matmul of a whole cache tile (static) and that of the last
  // one (K dynamic, shorter than cacheK).
  transform.named_sequence @hkt_gemm_k_blocks(
      %mm: !transform.any_op {transform.consumed},
      %rows: !transform.param<i64> {transform.readonly},
      %cacheN: !transform.param<i64> {transform.readonly},
      %cacheK: !transform.param<i64> {transform.readonly})
      -> (!transform.any_op, !transform.any_op) {
    %block, %forall = transform.structured.tile_using_forall %mm
        tile_sizes [%rows, 0, 0]
        : (!transform.any_op, !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op)
    %cache, %loopK, %loopN = transform.structured.tile_using_for %block
        tile_sizes [0, %cacheN, %cacheK] interchange = [0, 2, 1]
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %kLoop = transform.cast %loopK
        : !transform.any_op to !transform.op<"scf.for">
    %mainLoop, %restLoop = transform.loop.peel %kLoop
        : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
    transform.apply_patterns to %mainLoop {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %main = transform.structured.match ops{["linalg.matmul"]} in %mainLoop
        : (!transform.any_op) -> !transform.any_op
    %rest = transform.structured.match ops{["linalg.matmul"]} in %restLoop
        : (!transform.any_op) -> !transform.any_op
    transform.yield %main, %rest : !transform.any_op, !transform.any_op
  }

  // The last cache tile of a dynamic-K matmul: register tiles as
  // @hkt_gemm_registers with K steps of 1 (every step whole, so static and
  // vectorised; a peeled loop of regK steps keeps a min here that MLIR 22's
  // peeling does not simplify).
  transform.named_sequence @hkt_gemm_k_rest(
      %rest: !transform.any_op {transform.consumed},
      %regM: !transform.param<i64> {transform.readonly},
      %regN: !transform.param<i64> {transform.readonly}) {
    %step, %loops:3 = transform.structured.tile_using_for %rest
        tile_sizes [%regM, %regN, 1] interchange = [1, 0, 2]
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op, !transform.any_op,
            !transform.any_op)
    transform.structured.vectorize %step : !transform.any_op
    transform.yield
  }

  // The thread blocks and cache tiles of a whole matmul; returns the matmul
  // of one cache tile.
  transform.named_sequence @hkt_gemm_blocks(
      %mm: !transform.any_op {transform.consumed},
      %rows: !transform.param<i64> {transform.readonly},
      %cacheN: !transform.param<i64> {transform.readonly},
      %cacheK: !transform.param<i64> {transform.readonly})
      -> !transform.any_op {
    %block, %forall = transform.structured.tile_using_forall %mm
        tile_sizes [%rows, 0, 0]
        : (!transform.any_op, !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op)
    %cache, %loopK, %loopN = transform.structured.tile_using_for %block
        tile_sizes [0, %cacheN, %cacheK] interchange = [0, 2, 1]
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield %cache : !transform.any_op
  }

  // Register tiles of a cache tile, column panels outside rows; vectorised.
  transform.named_sequence @hkt_gemm_registers(
      %cache: !transform.any_op {transform.consumed},
      %regM: !transform.param<i64> {transform.readonly},
      %regN: !transform.param<i64> {transform.readonly},
      %regK: !transform.param<i64> {transform.readonly}) {
    %reg, %regLoops:3 = transform.structured.tile_using_for %cache
        tile_sizes [%regM, %regN, %regK] interchange = [1, 0, 2]
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op, !transform.any_op,
            !transform.any_op)
    transform.structured.vectorize %reg : !transform.any_op
    transform.yield
  }

  // A matmul inside a loop nest (an attention tile): register tiles only,
  // vectorised.
  transform.named_sequence @hkt_tile_gemm(
      %mm: !transform.any_op {transform.consumed},
      %regM: !transform.param<i64> {transform.readonly},
      %regN: !transform.param<i64> {transform.readonly},
      %regK: !transform.param<i64> {transform.readonly}) {
    %reg, %loops:3 = transform.structured.tile_using_for %mm
        tile_sizes [%regM, %regN, %regK]
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op, !transform.any_op,
            !transform.any_op)
    transform.structured.vectorize %reg : !transform.any_op
    transform.yield
  }

  // @hkt_tile_gemm with the rows split after `split` as in @hkt_gemm_split.
  transform.named_sequence @hkt_tile_gemm_split(
      %mm: !transform.any_op {transform.consumed},
      %regM: !transform.param<i64> {transform.readonly},
      %regN: !transform.param<i64> {transform.readonly},
      %regK: !transform.param<i64> {transform.readonly},
      %split: !transform.param<i64> {transform.readonly},
      %regM2: !transform.param<i64> {transform.readonly}) {
    %parts = transform.structured.split %mm after %split { dimension = 0 }
        : !transform.any_op, !transform.param<i64>
    %main, %rest = transform.split_handle %parts
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.include @hkt_tile_gemm failures(propagate)
        (%main, %regM, %regN, %regK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> ()
    transform.include @hkt_tile_gemm failures(propagate)
        (%rest, %regM2, %regN, %regK)
        : (!transform.any_op, !transform.param<i64>, !transform.param<i64>,
           !transform.param<i64>) -> ()
    transform.yield
  }

  // A 1-D op (a row of a tile): vectorised as it is.
  transform.named_sequence @hkt_whole(
      %op: !transform.any_op {transform.consumed}) {
    transform.structured.vectorize %op : !transform.any_op
    transform.yield
  }

  // An op whose every operand is read and written along its innermost loop
  // (elementwise ops, row reductions, fills): every outer loop tiled by 1,
  // the innermost by `inner` (0: the whole row), each piece vectorised.
  transform.named_sequence @hkt_rows_2d(
      %op: !transform.any_op {transform.consumed},
      %inner: !transform.param<i64> {transform.readonly}) {
    %row, %loops:2 = transform.structured.tile_using_for %op
        tile_sizes [1, %inner]
        : (!transform.any_op, !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.structured.vectorize %row : !transform.any_op
    transform.yield
  }

  transform.named_sequence @hkt_rows_3d(
      %op: !transform.any_op {transform.consumed},
      %inner: !transform.param<i64> {transform.readonly}) {
    %row, %loops:3 = transform.structured.tile_using_for %op
        tile_sizes [1, 1, %inner]
        : (!transform.any_op, !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op, !transform.any_op,
            !transform.any_op)
    transform.structured.vectorize %row : !transform.any_op
    transform.yield
  }

  transform.named_sequence @hkt_rows_4d(
      %op: !transform.any_op {transform.consumed},
      %inner: !transform.param<i64> {transform.readonly}) {
    %row, %loops:4 = transform.structured.tile_using_for %op
        tile_sizes [1, 1, 1, %inner]
        : (!transform.any_op, !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op, !transform.any_op,
            !transform.any_op, !transform.any_op)
    transform.structured.vectorize %row : !transform.any_op
    transform.yield
  }

  // An op outside the loop nests (downsampling, the hybrid head, packing,
  // normalisation, fills): split across threads by an scf.forall with the
  // packed tile sizes `threads` (one per loop, one of them non-zero).
  // Returns the op of one thread, for @hkt_rows_* when its rows are
  // contiguous.
  transform.named_sequence @hkt_split(
      %op: !transform.any_op {transform.consumed},
      %threads: !transform.param<i64> {transform.readonly})
      -> !transform.any_op {
    %part, %forall = transform.structured.tile_using_forall %op
        tile_sizes *(%threads)
        : (!transform.any_op, !transform.param<i64>)
        -> (!transform.any_op, !transform.any_op)
    transform.yield %part : !transform.any_op
  }

  // Once every op is vectorised, on every function: contractions recovered
  // from vectorize's broadcasts + multi_reduction, alias ops folded (without
  // this, hoisting silently does nothing on transfers through subviews).
  // hkt-cpu-codegen then runs hkt-cpu-hoist-vector-accumulators (the matmul
  // accumulators out of their K loops, through views), then
  // @hkt_lower_vectors.
  transform.named_sequence @hkt_prepare_vectors(
      %funcs: !transform.any_op {transform.readonly}) {
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.memref.fold_memref_alias_ops
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %funcs : !transform.any_op
    transform.yield
  }

  // Upstream hoisting where it applies (the pass's hoisting has done the
  // rest), then contractions lowered to outer products (the "dot" strategy
  // gives horizontal reductions and spills) and transfers to 1-D.
  transform.named_sequence @hkt_lower_vectors(
      %funcs: !transform.any_op {transform.consumed}) {
    %hoisted = transform.structured.hoist_redundant_vector_transfers %funcs
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_contraction
          lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_multi_reduction
          lowering_strategy = "innerreduction"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
