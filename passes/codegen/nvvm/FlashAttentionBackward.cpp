//===- FlashAttentionBackward.cpp - bf16 tensor-core attention backward ---===//
//
// hkt.online_attention_backward -> two kernels in the manner of
// FlashAttention-2 (docs/gpu.md), bf16 operands on mma.sync m16n8k16 with
// f32 accumulators, P recomputed from the saved log-sum-exp (never a T x T
// matrix in memory, at any level):
//
// - attention_bwd_dkdv: a block of four warps per (64 keys, head, batch),
//   each warp owning 16 keys, loops over the query tiles that see them
//   (two or one warps a block where four do not fit in shared memory).
//   Per tile: S^T = K Q^T (plus the coarse scores), P^T = exp(S^T - lse),
//   dP^T = V dO^T, dS^T = P^T (dP^T - delta); dV += P^T dO and dK0 +=
//   dS^T Q stay in registers. Each level >= 1's coarse gradient block
//   G = sum of dS over f x f blocks is summed in shared memory and turned
//   into dQ^(l) += G K^(l) and dK^(l) += G^T Q^(l) with f32 atomics (coarse
//   rows straddle tiles).
// - attention_bwd_dq: a block per 64 query rows (as many warps as the
//   first kernel) recomputes P and dS for
//   its rows and accumulates dQ0 = dS K in registers. A second pass rather
//   than atomics: dQ0 is written once, deterministically, and the
//   recomputation costs two of the five products.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/AttentionKernels.h"
#include "passes/codegen/nvvm/Bf16KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::hkt;
using namespace mlir::hkt::nvvm;

namespace {

using Target = NvvmTargetInfo;
constexpr int64_t kPad = Bf16KernelBuilder::kLdMatrixPad;

struct Shape : AttentionDims {
  /// Warps per block and the rows (keys of attention_bwd_dkdv, queries of
  /// attention_bwd_dq) a block owns, 16 per warp; the inner tile: query
  /// rows per step of the first, keys per step of the second.
  int64_t warps, block, inner;

  static int64_t coarse(int64_t rows, int64_t f) {
    return Bf16KernelBuilder::coarseRows(rows, f);
  }
  /// Shared bytes of the larger kernel (each array padded to the
  /// alignment of hkt-nvvm-align-workgroup-memory).
  int64_t sharedBytes() const {
    int64_t d = headDim, align = Target::kMmaFragmentAlignment;
    int64_t dkdv = 2 * (block + inner) * (d + kPad) * 2 + 2 * inner * 4 +
                   6 * align;
    int64_t dq = 2 * (block + inner) * (d + kPad) * 2 + 4 * align;
    for (int64_t l = 1; l < levels(); ++l) {
      int64_t f = factors[l];
      int64_t rq = coarse(inner, f), rk = coarse(block, f);
      int64_t pad = Bf16KernelBuilder::coarsePad(inner, block, f);
      dkdv += (rq + rk) * (d + pad) * 2 + 2 * rq * (rk + 1) * 4 +
              4 * align;
      rq = coarse(block, f), rk = coarse(inner, f);
      pad = Bf16KernelBuilder::coarsePad(block, inner, f);
      dq += (rq + rk) * (d + pad) * 2 + rq * (rk + 1) * 4 + 3 * align;
    }
    return std::max(dkdv, dq);
  }
};

/// The op's operands and destinations as buffers: the gradients start as
/// copies of their initial values and the kernels add to them.
struct Buffers {
  SmallVector<Value> queries, keys, dqueries, dkeys;
  Value value, dout, lse, delta, lengths, dvalue;
  AttentionExtents size;
};

/// What both kernels build: the masks, P and dS of one fragment element.
class KernelBase : protected Bf16KernelBuilder {
protected:
  KernelBase(OnlineAttentionBackwardOp op, const Shape &s, const Buffers &buf)
      : Bf16KernelBuilder(op, s.warps), op(op), s(s), buf(buf) {}

  /// Whether key j is live for query i (masked entries have P = 0).
  Value live(Value i, Value j) {
    Value ok = lt(j, buf.size.tk);
    ok = arith::AndIOp::create(b, ok, lt(i, buf.size.tq));
    if (op.getCausal())
      ok = arith::AndIOp::create(
          b, ok, arith::CmpIOp::create(b, arith::CmpIPredicate::ule, j, i));
    if (keyLength)
      ok = arith::AndIOp::create(b, ok, lt(j, keyLength));
    return ok;
  }
  /// The batch row's key length, clamped to [0, tk] (null without
  /// lengths).
  void loadKeyLength(Value batch) {
    if (!buf.lengths)
      return;
    Value raw = memref::LoadOp::create(b, buf.lengths, ValueRange{batch});
    Value len = arith::IndexCastOp::create(b, b.getIndexType(), raw);
    keyLength = arith::MinSIOp::create(b, arith::MaxSIOp::create(b, len, c(0)),
                                       buf.size.tk);
  }
  /// P = exp(S - lse) where live, else 0.
  Value probability(Value score, Value lse, Value isLive) {
    Value p = math::ExpOp::create(b, arith::SubFOp::create(b, score, lse));
    return arith::SelectOp::create(b, isLive, p, cf(0.0f));
  }
  /// `out[at] += x`, the destination a buffer this block owns.
  void accumulate(Value out, ValueRange at, Value x) {
    Value old = memref::LoadOp::create(b, out, at);
    memref::StoreOp::create(b, arith::AddFOp::create(b, old, x), out, at);
  }

  OnlineAttentionBackwardOp op;
  const Shape &s;
  const Buffers &buf;
  Value keyLength;
};

//===----------------------------------------------------------------------===//
// attention_bwd_dkdv
//===----------------------------------------------------------------------===//

class KeyValueKernel : KernelBase {
public:
  KeyValueKernel(OnlineAttentionBackwardOp op, const Shape &s,
                 const Buffers &buf)
      : KernelBase(op, s, buf) {}
  void build();

private:
  void allocateSharedArrays();
  void stageKeyBlock();
  Value firstQueryTile(Value queryTiles);
  /// One query tile: P, dS, the coarse gradient blocks; returns dV and
  /// dK0 updated.
  SmallVector<Value> tileStep(Value i0, ValueRange acc);
  /// P^T and dS^T of the tile from S^T and dP^T, each level's coarse
  /// gradient block summed in shared memory.
  void probabilitiesAndGradients(Value i0, ArrayRef<Fragment> scores,
                                 ArrayRef<Fragment> dp,
                                 SmallVector<Fragment> &p,
                                 SmallVector<Fragment> &ds);
  void storeKeyGradients(scf::ForOp loop);
  void stageQueryTile(Value i0);
  void computeCoarse(Value i0);
  void accumulateCoarseGradients();
  /// S^T (or dP^T) of the warp's 16 keys and the tile's queries.
  SmallVector<Fragment> product(Value rowTile, Value colTile);

  Value batch, head, col0, j0, warpKey0;
  Value keyTile, valueTile, queryTile, doutTile, lseTile, deltaTile;
  SmallVector<Value> coarseQ, coarseK, coarseS, coarseG;
  SmallVector<Value> qBase, kBase;
};

void KeyValueKernel::build() {
  int64_t d = s.headDim;
  gpu::LaunchOp launch =
      createLaunch(ceilDiv(b, buf.size.tk, s.block), c(s.heads), buf.size.batch,
                   "attention_bwd_dkdv");
  head = launch.getBlockIds().y;
  batch = launch.getBlockIds().z;
  col0 = mul(head, d);
  j0 = mul(launch.getBlockIds().x, s.block);
  warpKey0 = mul(warp, Target::kBf16MmaM);
  allocateSharedArrays();
  stageKeyBlock();
  loadKeyLength(batch);
  Value queryTiles = ceilDiv(b, buf.size.tq, s.inner);
  int64_t accCount = 2 * (d / Target::kBf16MmaN) * 4;
  SmallVector<Value> init(accCount, cf(0.0f));
  auto loop =
      scf::ForOp::create(b, firstQueryTile(queryTiles), queryTiles, c(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value i0 = mul(loop.getInductionVar(), s.inner);
    scf::YieldOp::create(b, tileStep(i0, loop.getRegionIterArgs()));
  }
  storeKeyGradients(loop);
}

void KeyValueKernel::allocateSharedArrays() {
  int64_t d = s.headDim;
  keyTile = sharedArray(s.block, d + kPad, bf16);
  valueTile = sharedArray(s.block, d + kPad, bf16);
  queryTile = sharedArray(s.inner, d + kPad, bf16);
  doutTile = sharedArray(s.inner, d + kPad, bf16);
  lseTile = sharedArray(1, s.inner, f32);
  deltaTile = sharedArray(1, s.inner, f32);
  coarseQ.resize(s.levels());
  coarseK.resize(s.levels());
  coarseS.resize(s.levels());
  coarseG.resize(s.levels());
  qBase.resize(s.levels());
  kBase.resize(s.levels());
  for (int64_t l = 1; l < s.levels(); ++l) {
    int64_t f = s.factors[l];
    int64_t rq = Shape::coarse(s.inner, f), rk = Shape::coarse(s.block, f);
    int64_t pad = coarsePad(s.inner, s.block, f);
    coarseQ[l] = sharedArray(rq, d + pad, bf16);
    coarseK[l] = sharedArray(rk, d + pad, bf16);
    coarseS[l] = sharedArray(rq, rk + 1, f32);
    coarseG[l] = sharedArray(rq, rk + 1, f32);
  }
}

/// The block's keys and values, once; each level's coarse keys too.
void KeyValueKernel::stageKeyBlock() {
  int64_t d = s.headDim;
  stage(keyTile, buf.keys[0], batch, col0, j0, s.block, buf.size.tk, d);
  stage(valueTile, buf.value, batch, col0, j0, s.block, buf.size.tk, d);
  for (int64_t l = 1; l < s.levels(); ++l) {
    int64_t f = s.factors[l];
    kBase[l] = div(j0, f);
    stage(coarseK[l], buf.keys[l], batch, col0, kBase[l],
          Shape::coarse(s.block, f), buf.size.keyRows[l], d);
  }
}

/// The first query tile that sees these keys: none above them (causal),
/// none at all if they are past the key length.
Value KeyValueKernel::firstQueryTile(Value queryTiles) {
  Value first = c(0);
  if (op.getCausal())
    first = arith::MinUIOp::create(b, div(j0, s.inner), queryTiles);
  if (keyLength)
    first = arith::SelectOp::create(b, lt(j0, keyLength), first, queryTiles);
  return first;
}

SmallVector<Value> KeyValueKernel::tileStep(Value i0, ValueRange acc) {
  int64_t d = s.headDim;
  stageQueryTile(i0);
  gpu::BarrierOp::create(b);
  computeCoarse(i0);
  gpu::BarrierOp::create(b);
  SmallVector<Fragment> scores = product(keyTile, queryTile);
  SmallVector<Fragment> dp = product(valueTile, doutTile);
  SmallVector<Fragment> p, ds;
  probabilitiesAndGradients(i0, scores, dp, p, ds);
  // dV += P^T dO and dK0 += dS^T Q: the queries are the k dimension.
  SmallVector<Value> next;
  for (auto [which, lhs, rhs] :
       {std::tuple{0, &p, doutTile}, std::tuple{1, &ds, queryTile}}) {
    SmallVector<Value> a;
    for (size_t n = 0; n + 1 < lhs->size(); n += 2)
      a.push_back(packA((*lhs)[n], (*lhs)[n + 1]));
    for (int64_t n = 0; n < d / Target::kBf16MmaN; ++n) {
      int64_t at = (which * (d / Target::kBf16MmaN) + n) * 4;
      Fragment o(acc.begin() + at, acc.begin() + at + 4);
      for (int64_t kk = 0; kk < s.inner / Target::kBf16MmaK; ++kk)
        o = mma(a[kk],
                loadBCols(rhs, kk * Target::kBf16MmaK, n * Target::kBf16MmaN),
                o);
      llvm::append_range(next, o);
    }
  }
  gpu::BarrierOp::create(b);
  accumulateCoarseGradients();
  // The next tile overwrites the shared arrays.
  gpu::BarrierOp::create(b);
  return next;
}

/// Element e of fragment n: key j0 + warpKey0 + g + 8 (e / 2), query
/// i0 + 8n + 2q + e % 2.
void KeyValueKernel::probabilitiesAndGradients(Value i0,
                                               ArrayRef<Fragment> scores,
                                               ArrayRef<Fragment> dp,
                                               SmallVector<Fragment> &p,
                                               SmallVector<Fragment> &ds) {
  Value quad2 = mul(quad, 2);
  p.resize(scores.size());
  ds.resize(scores.size());
  for (size_t n = 0; n < scores.size(); ++n)
    for (int64_t e = 0; e < 4; ++e) {
      Value key = add(add(j0, warpKey0), add(group, 8 * (e / 2)));
      Value col = add(quad2, int64_t(n) * Target::kBf16MmaN + e % 2);
      Value query = add(i0, col);
      Value score = scores[n][e];
      for (int64_t l = 1; l < s.levels(); ++l) {
        int64_t f = s.factors[l];
        Value I = arith::SubIOp::create(b, div(query, f), qBase[l]);
        Value J = arith::SubIOp::create(b, div(key, f), kBase[l]);
        score = arith::AddFOp::create(
            b, score, memref::LoadOp::create(b, coarseS[l], ValueRange{I, J}));
      }
      Value lse = memref::LoadOp::create(b, lseTile, ValueRange{c(0), col});
      Value delta = memref::LoadOp::create(b, deltaTile, ValueRange{c(0), col});
      p[n].push_back(probability(score, lse, live(query, key)));
      ds[n].push_back(arith::MulFOp::create(
          b, p[n][e], arith::SubFOp::create(b, dp[n][e], delta)));
      for (int64_t l = 1; l < s.levels(); ++l) {
        int64_t f = s.factors[l];
        Value I = arith::SubIOp::create(b, div(query, f), qBase[l]);
        Value J = arith::SubIOp::create(b, div(key, f), kBase[l]);
        memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addf, ds[n][e],
                                    coarseG[l], ValueRange{I, J});
      }
    }
}

/// The block owns its keys: dV and dK0 added once.
void KeyValueKernel::storeKeyGradients(scf::ForOp loop) {
  int64_t d = s.headDim;
  Value quad2 = mul(quad, 2);
  for (int64_t h = 0; h < 2; ++h) {
    Value key = add(add(j0, warpKey0), add(group, 8 * h));
    auto inside = scf::IfOp::create(b, lt(key, buf.size.tk), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&inside.getThenRegion().front());
    for (int64_t which = 0; which < 2; ++which)
      for (int64_t n = 0; n < d / Target::kBf16MmaN; ++n)
        for (int64_t e = 2 * h; e < 2 * h + 2; ++e) {
          int64_t at = (which * (d / Target::kBf16MmaN) + n) * 4 + e;
          Value col = add(add(col0, quad2), n * Target::kBf16MmaN + e % 2);
          accumulate(which ? buf.dkeys[0] : buf.dvalue,
                     ValueRange{batch, key, col}, loop.getResult(at));
        }
  }
}

/// The tile's queries and output gradients (bf16), their lse (+inf past
/// the end: P = 0) and delta, each level's coarse queries.
void KeyValueKernel::stageQueryTile(Value i0) {
  int64_t d = s.headDim;
  stage(queryTile, buf.queries[0], batch, col0, i0, s.inner, buf.size.tq, d);
  stage(doutTile, buf.dout, batch, col0, i0, s.inner, buf.size.tq, d);
  stageRow(lseTile, buf.lse, batch, head, i0, s.inner, buf.size.tq,
           std::numeric_limits<float>::infinity());
  stageRow(deltaTile, buf.delta, batch, head, i0, s.inner, buf.size.tq, 0.0f);
  for (int64_t l = 1; l < s.levels(); ++l) {
    int64_t f = s.factors[l];
    qBase[l] = div(i0, f);
    stage(coarseQ[l], buf.queries[l], batch, col0, qBase[l],
          Shape::coarse(s.inner, f), buf.size.queryRows[l], d);
  }
}

/// Each level's coarse scores of the tile pair; its gradient block zeroed.
void KeyValueKernel::computeCoarse(Value i0) {
  for (int64_t l = 1; l < s.levels(); ++l) {
    int64_t f = s.factors[l];
    int64_t rq = Shape::coarse(s.inner, f), rk = Shape::coarse(s.block, f);
    coarseBlock(coarseQ[l], coarseK[l], coarseS[l], s.inner, s.block, f,
                s.headDim);
    forEachElement(rq, rk + 1, [&](Value I, Value J) {
      memref::StoreOp::create(b, cf(0.0f), coarseG[l], ValueRange{I, J});
    });
  }
}

SmallVector<Fragment> KeyValueKernel::product(Value rowTile, Value colTile) {
  SmallVector<Value> a;
  for (int64_t k = 0; k < s.headDim; k += Target::kBf16MmaK)
    a.push_back(loadA(rowTile, warpKey0, k));
  SmallVector<Fragment> out;
  for (int64_t n = 0; n < s.inner; n += Target::kBf16MmaN) {
    Fragment acc(4, cf(0.0f));
    for (size_t kk = 0; kk < a.size(); ++kk)
      acc = mma(a[kk], loadBRows(colTile, n, kk * Target::kBf16MmaK), acc);
    out.push_back(acc);
  }
  return out;
}

/// dQ^(l)[I] += sum_J G[I, J] K^(l)[J] and dK^(l)[J] += sum_I G[I, J]
/// Q^(l)[I], by the block's threads, with f32 atomics: neighbouring tiles
/// share coarse rows.
void KeyValueKernel::accumulateCoarseGradients() {
  int64_t d = s.headDim;
  for (int64_t l = 1; l < s.levels(); ++l) {
    int64_t f = s.factors[l];
    int64_t rq = Shape::coarse(s.inner, f), rk = Shape::coarse(s.block, f);
    for (bool toQuery : {true, false}) {
      int64_t rows = toQuery ? rq : rk, over = toQuery ? rk : rq;
      Value other = toQuery ? coarseK[l] : coarseQ[l];
      Value dst = toQuery ? buf.dqueries[l] : buf.dkeys[l];
      Value base = toQuery ? qBase[l] : kBase[l];
      // The level's own length, read at run time where T is dynamic: the
      // last tile's coarse rows reach past it.
      Value limit = toQuery ? buf.size.queryRows[l] : buf.size.keyRows[l];
      forEachElement(rows, d, [&](Value r, Value k) {
        Value sum = cf(0.0f);
        for (int64_t o = 0; o < over; ++o) {
          Value g = memref::LoadOp::create(
              b, coarseG[l],
              toQuery ? ValueRange{r, c(o)} : ValueRange{c(o), r});
          Value y = memref::LoadOp::create(b, other, ValueRange{c(o), k});
          sum = math::FmaOp::create(b, g, arith::ExtFOp::create(b, f32, y),
                                    sum);
        }
        Value row = add(base, r);
        auto inside = scf::IfOp::create(b, lt(row, limit), false);
        b.setInsertionPointToStart(&inside.getThenRegion().front());
        memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addf, sum, dst,
                                    ValueRange{batch, row, add(col0, k)});
      });
    }
  }
}

//===----------------------------------------------------------------------===//
// attention_bwd_dq
//===----------------------------------------------------------------------===//

class QueryKernel : KernelBase {
public:
  QueryKernel(OnlineAttentionBackwardOp op, const Shape &s, const Buffers &buf)
      : KernelBase(op, s, buf) {}
  void build();

private:
  void stageQueryBlock();
  void loadRowState();
  /// One key tile: dS of the warp's rows, then dQ0 += dS K; returns the
  /// accumulator updated.
  SmallVector<Value> tileStep(Value j0, ValueRange acc);
  /// dS = P (dP - delta) of one 16 x 8 fragment of keys from `n`.
  Fragment gradientOfScores(Value j0, int64_t n, ArrayRef<Value> kBase);
  void storeQueryGradients(scf::ForOp loop);

  Value head, batch, col0, i0, warpRow0;
  Value queryTile, doutTile, keyTile, valueTile;
  SmallVector<Value> coarseQ, coarseK, coarseS, qBase;
  /// The warp's queries and output gradients as A fragments, once.
  SmallVector<Value> qA, doA;
  /// The lane's two rows, their lse and delta.
  Value rows[2], lse[2], delta[2];
};

void QueryKernel::build() {
  int64_t d = s.headDim;
  gpu::LaunchOp launch =
      createLaunch(ceilDiv(b, buf.size.tq, s.block), c(s.heads), buf.size.batch,
                   "attention_bwd_dq");
  head = launch.getBlockIds().y;
  batch = launch.getBlockIds().z;
  col0 = mul(head, d);
  i0 = mul(launch.getBlockIds().x, s.block);
  warpRow0 = mul(warp, Target::kBf16MmaM);
  stageQueryBlock();
  loadRowState();
  Value numTiles =
      countKeyTiles(b, op.getCausal(), buf.lengths, buf.size.tq, buf.size.tk,
                    i0, batch, s.block, s.inner, keyLength);
  SmallVector<Value> init((d / Target::kBf16MmaN) * 4, cf(0.0f));
  auto loop = scf::ForOp::create(b, c(0), numTiles, c(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j0 = mul(loop.getInductionVar(), s.inner);
    scf::YieldOp::create(b, tileStep(j0, loop.getRegionIterArgs()));
  }
  storeQueryGradients(loop);
}

/// The block's queries and output gradients and each level's coarse
/// queries, once; the key tiles' arrays.
void QueryKernel::stageQueryBlock() {
  int64_t d = s.headDim;
  queryTile = sharedArray(s.block, d + kPad, bf16);
  doutTile = sharedArray(s.block, d + kPad, bf16);
  keyTile = sharedArray(s.inner, d + kPad, bf16);
  valueTile = sharedArray(s.inner, d + kPad, bf16);
  coarseQ.resize(s.levels());
  coarseK.resize(s.levels());
  coarseS.resize(s.levels());
  qBase.resize(s.levels());
  for (int64_t l = 1; l < s.levels(); ++l) {
    int64_t f = s.factors[l];
    int64_t rq = Shape::coarse(s.block, f), rk = Shape::coarse(s.inner, f);
    int64_t pad = coarsePad(s.block, s.inner, f);
    coarseQ[l] = sharedArray(rq, d + pad, bf16);
    coarseK[l] = sharedArray(rk, d + pad, bf16);
    coarseS[l] = sharedArray(rq, rk + 1, f32);
    qBase[l] = div(i0, f);
    stage(coarseQ[l], buf.queries[l], batch, col0, qBase[l], rq,
          buf.size.queryRows[l], d);
  }
  stage(queryTile, buf.queries[0], batch, col0, i0, s.block, buf.size.tq, d);
  stage(doutTile, buf.dout, batch, col0, i0, s.block, buf.size.tq, d);
  gpu::BarrierOp::create(b);
}

void QueryKernel::loadRowState() {
  for (int64_t k = 0; k < s.headDim; k += Target::kBf16MmaK) {
    qA.push_back(loadA(queryTile, warpRow0, k));
    doA.push_back(loadA(doutTile, warpRow0, k));
  }
  for (int64_t h = 0; h < 2; ++h) {
    rows[h] = add(add(i0, warpRow0), add(group, 8 * h));
    Value rowC = arith::MinUIOp::create(b, rows[h], minusOne(buf.size.tq));
    lse[h] = memref::LoadOp::create(b, buf.lse, ValueRange{batch, head, rowC});
    delta[h] =
        memref::LoadOp::create(b, buf.delta, ValueRange{batch, head, rowC});
  }
}

SmallVector<Value> QueryKernel::tileStep(Value j0, ValueRange acc) {
  int64_t d = s.headDim;
  stage(keyTile, buf.keys[0], batch, col0, j0, s.inner, buf.size.tk, d);
  stage(valueTile, buf.value, batch, col0, j0, s.inner, buf.size.tk, d);
  SmallVector<Value> kBase(s.levels());
  for (int64_t l = 1; l < s.levels(); ++l) {
    int64_t f = s.factors[l];
    kBase[l] = div(j0, f);
    stage(coarseK[l], buf.keys[l], batch, col0, kBase[l],
          Shape::coarse(s.inner, f), buf.size.keyRows[l], d);
  }
  gpu::BarrierOp::create(b);
  for (int64_t l = 1; l < s.levels(); ++l)
    coarseBlock(coarseQ[l], coarseK[l], coarseS[l], s.block, s.inner,
                s.factors[l], d);
  gpu::BarrierOp::create(b);
  SmallVector<Fragment> ds;
  for (int64_t n = 0; n < s.inner; n += Target::kBf16MmaN)
    ds.push_back(gradientOfScores(j0, n, kBase));
  // dQ0 += dS K: the keys are the k dimension.
  SmallVector<Value> a, next;
  for (size_t n = 0; n + 1 < ds.size(); n += 2)
    a.push_back(packA(ds[n], ds[n + 1]));
  for (int64_t n = 0; n < d / Target::kBf16MmaN; ++n) {
    Fragment o(acc.begin() + 4 * n, acc.begin() + 4 * n + 4);
    for (int64_t kk = 0; kk < s.inner / Target::kBf16MmaK; ++kk)
      o = mma(a[kk],
              loadBCols(keyTile, kk * Target::kBf16MmaK, n * Target::kBf16MmaN),
              o);
    llvm::append_range(next, o);
  }
  // The next tile overwrites the shared arrays.
  gpu::BarrierOp::create(b);
  return next;
}

Fragment QueryKernel::gradientOfScores(Value j0, int64_t n,
                                       ArrayRef<Value> kBase) {
  Fragment score(4, cf(0.0f)), dp(4, cf(0.0f));
  for (size_t kk = 0; kk < qA.size(); ++kk) {
    score = mma(qA[kk], loadBRows(keyTile, n, kk * Target::kBf16MmaK), score);
    dp = mma(doA[kk], loadBRows(valueTile, n, kk * Target::kBf16MmaK), dp);
  }
  Value quad2 = mul(quad, 2);
  Fragment ds;
  for (int64_t e = 0; e < 4; ++e) {
    Value key = add(j0, add(quad2, n + e % 2));
    Value x = score[e];
    for (int64_t l = 1; l < s.levels(); ++l) {
      int64_t f = s.factors[l];
      Value I = arith::SubIOp::create(b, div(rows[e / 2], f), qBase[l]);
      Value J = arith::SubIOp::create(b, div(key, f), kBase[l]);
      x = arith::AddFOp::create(
          b, x, memref::LoadOp::create(b, coarseS[l], ValueRange{I, J}));
    }
    Value p = probability(x, lse[e / 2], live(rows[e / 2], key));
    ds.push_back(arith::MulFOp::create(
        b, p, arith::SubFOp::create(b, dp[e], delta[e / 2])));
  }
  return ds;
}

/// The block owns its rows: dQ0 added once.
void QueryKernel::storeQueryGradients(scf::ForOp loop) {
  Value quad2 = mul(quad, 2);
  for (int64_t h = 0; h < 2; ++h) {
    auto inside = scf::IfOp::create(b, lt(rows[h], buf.size.tq), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&inside.getThenRegion().front());
    for (int64_t n = 0; n < s.headDim / Target::kBf16MmaN; ++n)
      for (int64_t e = 2 * h; e < 2 * h + 2; ++e) {
        Value col = add(add(col0, quad2), n * Target::kBf16MmaN + e % 2);
        accumulate(buf.dqueries[0], ValueRange{batch, rows[h], col},
                   loop.getResult(4 * n + e));
      }
  }
}

FailureOr<Shape> kernelShape(OnlineAttentionBackwardOp op, int64_t tile) {
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
           << s.headDim << ")";
  // Four warps a block and the inner tile asked for; smaller inner tiles,
  // then fewer warps (d = 128), until the shared arrays fit in the static
  // 48 KiB; beyond that (d = 256), dynamic shared memory.
  for (s.warps = Bf16KernelBuilder::kWarps; s.warps >= 1; s.warps /= 2) {
    s.block = s.warps * Target::kBf16MmaM;
    s.inner = std::max<int64_t>(Target::kBf16MmaK,
                                tile / Target::kBf16MmaK * Target::kBf16MmaK);
    while (s.sharedBytes() > Target::kStaticSharedMemoryBytes &&
           s.inner > Target::kBf16MmaK)
      s.inner = std::max<int64_t>(Target::kBf16MmaK, s.inner / 2 /
                                                         Target::kBf16MmaK *
                                                         Target::kBf16MmaK);
    if (s.sharedBytes() <= Target::kStaticSharedMemoryBytes || s.warps == 1)
      break;
  }
  if (s.sharedBytes() > Target::kMaxSharedMemoryBytes)
    return fail("even one warp a block and an inner tile of ")
           << s.inner << " need " << s.sharedBytes()
           << " bytes of shared memory, more than the "
           << Target::kMaxSharedMemoryBytes / 1024 << " KiB of a block";
  return s;
}

} // namespace

LogicalResult
mlir::hkt::nvvm::lowerToFlashAttentionBackward(OnlineAttentionBackwardOp op,
                                               int64_t tile) {
  FailureOr<Shape> shape = kernelShape(op, tile);
  if (failed(shape))
    return failure();
  ImplicitLocOpBuilder b(op.getLoc(), op);
  Buffers buf;
  buf.queries = readOnlyBuffers(b, op.getQueries());
  buf.keys = readOnlyBuffers(b, op.getKeys());
  buf.value = readOnlyBuffer(b, op.getValue());
  buf.dout = readOnlyBuffer(b, op.getDout());
  buf.lse = readOnlyBuffer(b, op.getLse());
  buf.delta = readOnlyBuffer(b, op.getDelta());
  buf.lengths = op.getLengths() ? readOnlyBuffer(b, op.getLengths()) : Value();
  // The gradients start from their initial values; the kernels add.
  buf.size = AttentionExtents::create(b, buf.queries, buf.keys, buf.value);
  auto copyOf = [&](Value init) -> Value {
    Value out = allocLike(b, init);
    memref::CopyOp::create(b, readOnlyBuffer(b, init), out);
    return out;
  };
  for (Value init : op.getDqueryInit())
    buf.dqueries.push_back(copyOf(init));
  for (Value init : op.getDkeyInit())
    buf.dkeys.push_back(copyOf(init));
  buf.dvalue = copyOf(op.getDvalueInit());
  {
    KeyValueKernel kv(op, *shape, buf);
    kv.build();
  }
  {
    QueryKernel dq(op, *shape, buf);
    dq.build();
  }
  b.setInsertionPoint(op);
  SmallVector<Value> results;
  SmallVector<Value> outs(buf.dqueries);
  llvm::append_range(outs, buf.dkeys);
  outs.push_back(buf.dvalue);
  for (auto [out, result] : llvm::zip(outs, op.getResults()))
    results.push_back(bufferization::ToTensorOp::create(
        b, result.getType(), out, /*restrict=*/true, /*writable=*/true));
  op.replaceAllUsesWith(results);
  op.erase();
  return success();
}
