//===- FlashAttentionForward.cpp - bf16 tensor-core attention forward -----===//
//
// hkt.online_attention -> the kernel `attention_fwd`, in the manner of
// FlashAttention-2 (docs/gpu.md): a block of four warps per (64-row query
// tile, head, batch row), each warp owning 16 query rows. K0 and V are
// converted to bf16 in global memory first (a kernel `to_bf16` each) and
// their tiles copied to shared memory with cp.async, double-buffered: the
// copy of tile t + 1 runs while tile t is computed (one stage where two
// do not fit). The queries and coarse keys are rounded to bf16 as they
// are staged; the level-0 query fragments are loaded once with ldmatrix
// and stay in registers. Per key tile: S = Q0 K0^T on mma.sync m16n8k16
// (bf16 -> f32), each level >= 1's coarse score block computed once per
// tile pair into shared memory and added to the fragment elements it
// covers (SPEC 4), the masks, the online softmax on the accumulator
// fragments (row max by warp shuffles; each lane keeps a partial row sum,
// reduced once at the end), P re-packed to bf16 A fragments in registers,
// and O += P V with V's fragments from ldmatrix.trans. Key tiles above the
// block's diagonal (causal) or past the key length are not visited.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/AttentionKernels.h"
#include "passes/codegen/nvvm/Bf16KernelBuilder.h"
#include "passes/codegen/nvvm/Passes.h"
#include "passes/codegen/nvvm/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::hkt;
using namespace mlir::hkt::nvvm;

namespace {

using Target = NvvmTargetInfo;

constexpr int64_t kTileQ = Bf16KernelBuilder::kBlockRows;
constexpr int64_t kLdMatrixPad = Bf16KernelBuilder::kLdMatrixPad;
constexpr int64_t kBf16Bytes = 2;

struct Shape : AttentionDims {
  int64_t tileK;
  /// Shared-memory stages of the key and value tiles: 2 (cp.async of the
  /// next tile while this one is computed) or 1.
  int64_t stages = 2;

  static int64_t coarseRows(int64_t rows, int64_t f) {
    return Bf16KernelBuilder::coarseRows(rows, f);
  }
  int64_t sharedBytes() const {
    int64_t bytes = (kTileQ + 2 * stages * tileK) * (headDim + kLdMatrixPad) *
                    kBf16Bytes;
    for (int64_t l = 1; l < levels(); ++l) {
      int64_t rq = coarseRows(kTileQ, factors[l]);
      int64_t rk = coarseRows(tileK, factors[l]);
      int64_t pad = Bf16KernelBuilder::coarsePad(kTileQ, tileK, factors[l]);
      bytes += (rq + rk) * (headDim + pad) * kBf16Bytes +
               rq * (rk + 1) * 4;
    }
    // Each array may be padded to hkt-nvvm-align-workgroup-memory's
    // alignment.
    int64_t arrays = 3 + 3 * (levels() - 1);
    return bytes + Target::kMmaFragmentAlignment * arrays;
  }
};

class Lowering : Bf16KernelBuilder {
public:
  Lowering(OnlineAttentionOp op, const Shape &shape)
      : Bf16KernelBuilder(op), op(op), s(shape) {}
  void run();

private:
  // The kernel, once per block.
  void allocateSharedArrays();
  void computeRowIndices(gpu::LaunchOp launch);
  void stage(Value dst, Value src, Value base, int64_t rows, Value limit) {
    Bf16KernelBuilder::stage(dst, src, batch, col0, base, rows, limit,
                             s.headDim);
  }
  void loadQueryFragments();
  SmallVector<Value> loadRowState();
  scf::ForOp buildTileLoop(ValueRange init, Value numTiles);
  void copyKeyValueTile(Value firstKey, Value row0);
  void stageKeyValueTiles(Value tile);
  void stageCoarseKeys();
  void computeCoarseScores();
  SmallVector<Fragment> computeScores();
  void addCoarseScoresAndMasks(SmallVector<Fragment> &scores);
  SmallVector<Value> onlineSoftmax(ValueRange state,
                                   SmallVector<Fragment> &scores);
  SmallVector<Value> accumulatePV(ArrayRef<Value> pA, ValueRange acc);
  void storeResults(scf::ForOp tileLoop);

  OnlineAttentionOp op;
  Shape s;
  AttentionBuffers buf;
  AttentionExtents size;
  /// K0 and V in bf16 (global memory), the cp.async sources.
  Value keysBf16, valueBf16;

  // Shared arrays: the level-0 query tile, the key and value tiles, each
  // level >= 1's coarse query and key tiles and coarse scores.
  Value queryTile, keyTile, valueTile;
  SmallVector<Value> coarseQueries, coarseKeys, coarseScores;

  Value batch, head, col0, i0, warpRow0;
  /// The lane's two rows (group and group + 8 of its warp's 16), those
  /// clamped to the sequence, and whether they are inside it.
  Value rows[2], rowsC[2], inside[2];
  /// First coarse row of each level's query tile.
  SmallVector<Value> coarseQueryBase;
  /// The warp's level-0 query fragments, one per 16 columns.
  SmallVector<Value> queryFragments;
  Value keyLength, j0, negInf;
  /// First row of the current tile's stage in keyTile and valueTile.
  Value stageRow0;
  SmallVector<Value> coarseKeyBase;
};

void Lowering::run() {
  keysBf16 = readOnlyBuffer(b, toBf16(b, op.getKeys()[0]));
  valueBf16 = readOnlyBuffer(b, toBf16(b, op.getValue()));
  buf = AttentionBuffers::create(b, op);
  size = AttentionExtents::create(b, buf.queries, buf.keys, buf.value);
  gpu::LaunchOp launch = createLaunch(ceilDiv(b, size.tq, kTileQ), c(s.heads),
                                      size.batch, "attention_fwd");
  allocateSharedArrays();
  computeRowIndices(launch);
  stage(queryTile, buf.queries[0], i0, kTileQ, size.tq);
  for (int64_t l = 1; l < s.levels(); ++l) {
    int64_t f = s.factors[l];
    stage(coarseQueries[l], buf.queries[l], coarseQueryBase[l],
          Shape::coarseRows(kTileQ, f), size.queryRows[l]);
  }
  gpu::BarrierOp::create(b);
  loadQueryFragments();
  SmallVector<Value> init = loadRowState();
  Value numTiles =
      countKeyTiles(b, op.getCausal(), buf.lengths, size.tq, size.tk, i0, batch,
                    kTileQ, s.tileK, keyLength);
  scf::ForOp tileLoop = buildTileLoop(init, numTiles);
  storeResults(tileLoop);
  buf.replaceOp(b, op, launch);
}

/// Workgroup allocas (hkt-nvvm-host-staging makes them attributions).
void Lowering::allocateSharedArrays() {
  int64_t d = s.headDim;
  queryTile = sharedArray(kTileQ, d + kLdMatrixPad, bf16);
  keyTile = sharedArray(s.stages * s.tileK, d + kLdMatrixPad, bf16);
  valueTile = sharedArray(s.stages * s.tileK, d + kLdMatrixPad, bf16);
  coarseQueries.resize(s.levels());
  coarseKeys.resize(s.levels());
  coarseScores.resize(s.levels());
  for (int64_t l = 1; l < s.levels(); ++l) {
    int64_t rq = Shape::coarseRows(kTileQ, s.factors[l]);
    int64_t rk = Shape::coarseRows(s.tileK, s.factors[l]);
    int64_t pad = coarsePad(kTileQ, s.tileK, s.factors[l]);
    coarseQueries[l] = sharedArray(rq, d + pad, bf16);
    coarseKeys[l] = sharedArray(rk, d + pad, bf16);
    coarseScores[l] = sharedArray(rq, rk + 1, f32);
  }
}

/// The lane's two rows: group = lane / 4 picks the row (and row + 8).
void Lowering::computeRowIndices(gpu::LaunchOp launch) {
  head = launch.getBlockIds().y;
  batch = launch.getBlockIds().z;
  col0 = arith::MulIOp::create(b, head, c(s.headDim));
  i0 = arith::MulIOp::create(b, launch.getBlockIds().x, c(kTileQ));
  warpRow0 = mul(warp, Target::kBf16MmaM);
  for (int h = 0; h < 2; ++h) {
    rows[h] = add(add(i0, warpRow0), add(group, 8 * h));
    inside[h] =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rows[h], size.tq);
    rowsC[h] = arith::MinUIOp::create(b, rows[h], minusOne(size.tq));
  }
  coarseQueryBase.resize(s.levels());
  for (int64_t l = 1; l < s.levels(); ++l)
    coarseQueryBase[l] = div(i0, s.factors[l]);
  negInf = cf(-std::numeric_limits<float>::infinity());
}

/// The warp's 16 x d level-0 queries as A fragments (x4: rows 0-7 and
/// 8-15 of columns k..k+7, then of k+8..k+15), once for every key tile.
void Lowering::loadQueryFragments() {
  for (int64_t k = 0; k < s.headDim; k += Target::kBf16MmaK)
    queryFragments.push_back(loadA(queryTile, warpRow0, k));
}

/// The running max and (partial) sum of the lane's two rows and its
/// accumulator fragments, from the op's initial state.
SmallVector<Value> Lowering::loadRowState() {
  SmallVector<Value> init;
  Value firstOfQuad =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, quad, c(0));
  for (int h = 0; h < 2; ++h)
    init.push_back(memref::LoadOp::create(b, buf.maxIn,
                                          ValueRange{batch, head, rowsC[h]}));
  // Each lane of a quad keeps a partial sum: the initial one goes to the
  // first.
  for (int h = 0; h < 2; ++h) {
    Value sum = memref::LoadOp::create(b, buf.sumIn,
                                       ValueRange{batch, head, rowsC[h]});
    init.push_back(arith::SelectOp::create(b, firstOfQuad, sum, cf(0.0f)));
  }
  for (int64_t n = 0; n < s.headDim; n += Target::kBf16MmaN)
    for (int64_t e = 0; e < 4; ++e) {
      Value col = add(add(col0, n + e % 2), arith::MulIOp::create(b, quad, c(2)));
      init.push_back(memref::LoadOp::create(
          b, buf.accIn, ValueRange{batch, rowsC[e / 2], col}));
    }
  return init;
}

scf::ForOp Lowering::buildTileLoop(ValueRange init, Value numTiles) {
  // Two stages: tile 0's copies are issued before the loop.
  if (s.stages == 2) {
    copyKeyValueTile(c(0), c(0));
    gpu::BarrierOp::create(b)->setAttr(kAsyncCopyCommitAttr, b.getUnitAttr());
  }
  auto tileLoop = scf::ForOp::create(b, c(0), numTiles, c(1), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(tileLoop.getBody());
  j0 = arith::MulIOp::create(b, tileLoop.getInductionVar(), c(s.tileK));
  stageKeyValueTiles(tileLoop.getInductionVar());
  stageCoarseKeys();
  // The copies of this tile have landed (all groups but the next tile's),
  // and every thread's are visible after the barrier.
  gpu::BarrierOp::create(b)->setAttr(kAsyncCopyWaitAttr,
                                     b.getI32IntegerAttr(s.stages - 1));
  if (s.levels() > 1) {
    computeCoarseScores();
    gpu::BarrierOp::create(b);
  }
  SmallVector<Fragment> scores = computeScores();
  addCoarseScoresAndMasks(scores);
  SmallVector<Value> next = onlineSoftmax(tileLoop.getRegionIterArgs(), scores);
  // The next tile overwrites the shared arrays.
  gpu::BarrierOp::create(b);
  scf::YieldOp::create(b, next);
  return tileLoop;
}

/// cp.async of keys firstKey.. (a tile) of K0 and V to rows row0.. of
/// keyTile and valueTile, 16 bytes (8 columns) a copy; keys past the end
/// are zero-filled (V must be finite where P is 0).
void Lowering::copyKeyValueTile(Value firstKey, Value row0) {
  constexpr int64_t chunk = 8;
  forEachElement(s.tileK, s.headDim / chunk, [&](Value r, Value j) {
    Value key = add(firstKey, r);
    Value clamped = arith::MinUIOp::create(b, key, minusOne(size.tk));
    Value count = arith::SelectOp::create(b, lt(key, size.tk), c(chunk), c(0));
    Value col = mul(j, chunk);
    auto token = nvgpu::DeviceAsyncTokenType::get(b.getContext());
    for (auto [dst, src] : {std::pair(keyTile, keysBf16),
                            std::pair(valueTile, valueBf16)})
      nvgpu::DeviceAsyncCopyOp::create(
          b, token, dst, ValueRange{add(row0, r), col}, src,
          ValueRange{batch, clamped, add(col0, col)},
          b.getIndexAttr(chunk), count, b.getUnitAttr());
  });
}

/// Issues the copies for tile `tile`'s keys and values (its stage:
/// stageRow0); the barrier after the staging waits for them. Two stages:
/// tile `tile`'s copies were issued an iteration earlier; the next tile's
/// go now, into the other stage, whose last readers passed the previous
/// iteration's final barrier.
void Lowering::stageKeyValueTiles(Value tile) {
  if (s.stages == 1) {
    stageRow0 = c(0);
    copyKeyValueTile(j0, stageRow0);
    return;
  }
  stageRow0 = mul(rem(tile, 2), s.tileK);
  Value next = add(tile, 1);
  copyKeyValueTile(mul(next, s.tileK), mul(rem(next, 2), s.tileK));
}

void Lowering::stageCoarseKeys() {
  coarseKeyBase.assign(s.levels(), Value());
  for (int64_t l = 1; l < s.levels(); ++l) {
    int64_t f = s.factors[l];
    coarseKeyBase[l] = div(j0, f);
    stage(coarseKeys[l], buf.keys[l], coarseKeyBase[l],
          Shape::coarseRows(s.tileK, f), size.keyRows[l]);
  }
}

/// Each level >= 1's coarse score block, once per tile pair: on the tensor
/// cores where its shape allows, else by the block's threads together.
void Lowering::computeCoarseScores() {
  for (int64_t l = 1; l < s.levels(); ++l)
    coarseBlock(coarseQueries[l], coarseKeys[l], coarseScores[l], kTileQ,
                s.tileK, s.factors[l], s.headDim);
}

/// S0 = Q0 K0^T for the warp's 16 rows and the tile's keys, one fragment
/// per 8 keys. K's rows are B's columns: ldmatrix without transposition
/// gives the col-major B fragment.
SmallVector<Fragment> Lowering::computeScores() {
  SmallVector<Fragment> scores;
  for (int64_t n = 0; n < s.tileK; n += Target::kBf16MmaN) {
    Fragment acc(4, cf(0.0f));
    for (int64_t kk = 0; kk < s.headDim / Target::kBf16MmaK; ++kk)
      acc = mma(queryFragments[kk],
                loadBRows(keyTile, add(stageRow0, n), kk * Target::kBf16MmaK),
                acc);
    scores.push_back(acc);
  }
  return scores;
}

/// Element e of fragment n is row rows[e / 2], key j0 + n * 8 + 2 quad +
/// e % 2: add each level's coarse score of that pair, or -inf if the key
/// is masked (causal, past the end, past the key length).
void Lowering::addCoarseScoresAndMasks(SmallVector<Fragment> &scores) {
  Value quad2 = arith::MulIOp::create(b, quad, c(2));
  for (auto [n, frag] : llvm::enumerate(scores))
    for (int64_t e = 0; e < 4; ++e) {
      Value jj = add(quad2, int64_t(n) * Target::kBf16MmaN + e % 2);
      Value j = add(j0, jj);
      Value score = frag[e];
      for (int64_t l = 1; l < s.levels(); ++l) {
        int64_t f = s.factors[l];
        Value I = arith::SubIOp::create(b, div(rows[e / 2], f),
                                        coarseQueryBase[l]);
        Value J = arith::SubIOp::create(b, div(j, f), coarseKeyBase[l]);
        score = arith::AddFOp::create(
            b, score,
            memref::LoadOp::create(b, coarseScores[l], ValueRange{I, J}));
      }
      Value live =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j, size.tk);
      if (op.getCausal())
        live = arith::AndIOp::create(
            b, live,
            arith::CmpIOp::create(b, arith::CmpIPredicate::ule, j,
                                  rowsC[e / 2]));
      if (keyLength)
        live = arith::AndIOp::create(
            b, live,
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j, keyLength));
      frag[e] = arith::SelectOp::create(b, live, score, negInf);
    }
}

/// The online-softmax update of the lane's two rows over the tile, then
/// O = alpha O + P V; returns the loop's next state.
SmallVector<Value> Lowering::onlineSoftmax(ValueRange state,
                                           SmallVector<Fragment> &scores) {
  Value alpha[2], mNew[2], sum[2];
  for (int h = 0; h < 2; ++h) {
    Value tileMax = negInf;
    for (Fragment &frag : scores)
      for (int64_t e = 2 * h; e < 2 * h + 2; ++e)
        tileMax = arith::MaximumFOp::create(b, tileMax, frag[e]);
    mNew[h] = arith::MaximumFOp::create(b, state[h], quadReduce(tileMax, /*max=*/true));
    // A row with no live key yet keeps max -inf: subtract 0 instead, so
    // that exp(-inf - -inf) does not make a NaN.
    Value none = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mNew[h],
                                       negInf);
    Value shift = arith::SelectOp::create(b, none, cf(0.0f), mNew[h]);
    alpha[h] = math::ExpOp::create(b, arith::SubFOp::create(b, state[h], shift));
    sum[h] = arith::MulFOp::create(b, state[2 + h], alpha[h]);
    for (Fragment &frag : scores)
      for (int64_t e = 2 * h; e < 2 * h + 2; ++e) {
        frag[e] =
            math::ExpOp::create(b, arith::SubFOp::create(b, frag[e], shift));
        sum[h] = arith::AddFOp::create(b, sum[h], frag[e]);
      }
  }
  // P as A fragments, in registers: keys 16k..16k+15 are score fragments
  // 2k and 2k + 1.
  SmallVector<Value> pA;
  for (size_t n = 0; n < scores.size(); n += 2)
    pA.push_back(packA(scores[n], scores[n + 1]));
  SmallVector<Value> acc;
  for (auto [i, o] : llvm::enumerate(state.drop_front(4)))
    acc.push_back(arith::MulFOp::create(b, o, alpha[(i % 4) / 2]));
  SmallVector<Value> next{mNew[0], mNew[1], sum[0], sum[1]};
  llvm::append_range(next, accumulatePV(pA, acc));
  return next;
}

/// O += P V, one 16 x 8 accumulator fragment per 8 columns of the head;
/// V's rows are B's rows (k): ldmatrix.trans gives the col-major fragment.
SmallVector<Value> Lowering::accumulatePV(ArrayRef<Value> pA, ValueRange acc) {
  SmallVector<Value> out;
  for (int64_t n = 0; n < s.headDim / Target::kBf16MmaN; ++n) {
    Fragment o(acc.begin() + 4 * n, acc.begin() + 4 * n + 4);
    for (int64_t kk = 0; kk < s.tileK / Target::kBf16MmaK; ++kk)
      o = mma(pA[kk],
              loadBCols(valueTile, add(stageRow0, kk * Target::kBf16MmaK),
                        n * Target::kBf16MmaN),
              o);
    llvm::append_range(out, o);
  }
  return out;
}

/// The quad's partial sums reduced, then each lane's elements stored; rows
/// past the sequence store nothing.
void Lowering::storeResults(scf::ForOp tileLoop) {
  ValueRange state = tileLoop.getResults();
  Value firstOfQuad =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, quad, c(0));
  Value quad2 = arith::MulIOp::create(b, quad, c(2));
  for (int h = 0; h < 2; ++h) {
    // Every lane shuffles (no lane may sit out a warp-level op).
    Value sum = quadReduce(state[2 + h], /*max=*/false);
    auto store = scf::IfOp::create(b, inside[h], /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&store.getThenRegion().front());
    auto stats = scf::IfOp::create(b, firstOfQuad, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(&stats.getThenRegion().front());
      memref::StoreOp::create(b, state[h], buf.outs[1],
                              ValueRange{batch, head, rows[h]});
      memref::StoreOp::create(b, sum, buf.outs[2],
                              ValueRange{batch, head, rows[h]});
    }
    for (int64_t n = 0; n < s.headDim / Target::kBf16MmaN; ++n)
      for (int64_t e = 2 * h; e < 2 * h + 2; ++e) {
        Value col = add(add(col0, quad2), n * Target::kBf16MmaN + e % 2);
        memref::StoreOp::create(b, state[4 + 4 * n + e], buf.outs[0],
                                ValueRange{batch, rows[h], col});
      }
  }
}

/// Checks what the kernel supports and picks the key tile.
FailureOr<Shape> kernelShape(OnlineAttentionOp op, int64_t tileK) {
  auto fail = [&](const Twine &why) {
    return op.emitOpError("cannot be lowered for the GPU in bf16: ") << why;
  };
  if (failed(checkKernelOperands(op, op.getLengths(), op.getQueryOffset(),
                                 "cannot be lowered for the GPU in bf16: ",
                                 "the operands are rounded to bf16 from f32")))
    return failure();
  Shape s;
  static_cast<AttentionDims &>(s) = AttentionDims::of(op);
  if (failed(s.check(op, "cannot be lowered for the GPU in bf16: ")))
    return failure();
  if (s.headDim % Target::kBf16MmaK || s.headDim > 256)
    return fail("the head width must be a multiple of 16 up to 256 (got ")
           << s.headDim << "); use --precision f32";
  // Whole 16-key fragments of P; halved until the shared arrays fit in a
  // block's static 48 KiB. What does not fit even then (d = 256) takes
  // dynamic shared memory (hkt-nvvm-dynamic-shared-memory).
  auto fit = [&](int64_t stages) {
    s.stages = stages;
    s.tileK = std::max<int64_t>(Target::kBf16MmaK,
                                tileK / Target::kBf16MmaK * Target::kBf16MmaK);
    while (s.sharedBytes() > Target::kStaticSharedMemoryBytes &&
           s.tileK > Target::kBf16MmaK)
      s.tileK = std::max<int64_t>(Target::kBf16MmaK,
                                  s.tileK / 2 / Target::kBf16MmaK *
                                      Target::kBf16MmaK);
    return s.sharedBytes();
  };
  // Two stages of keys and values in 48 KiB, else one; beyond 48 KiB
  // (dynamic shared memory) two where they fit.
  if (fit(2) > Target::kStaticSharedMemoryBytes &&
      fit(1) > Target::kStaticSharedMemoryBytes &&
      fit(2) > Target::kMaxSharedMemoryBytes)
    fit(1);
  if (s.sharedBytes() > Target::kMaxSharedMemoryBytes)
    return fail("even a key tile of ")
           << s.tileK << " needs " << s.sharedBytes()
           << " bytes of shared memory, more than the "
           << Target::kMaxSharedMemoryBytes / 1024 << " KiB of a block";
  return s;
}

} // namespace

LogicalResult mlir::hkt::nvvm::lowerToFlashAttentionForward(OnlineAttentionOp op,
                                                             int64_t tileK) {
  FailureOr<Shape> shape = kernelShape(op, tileK);
  if (failed(shape))
    return failure();
  Lowering(op, *shape).run();
  return success();
}
