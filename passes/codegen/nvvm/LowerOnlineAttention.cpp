//===- GpuLowerOnlineAttention.cpp - hkt.online_attention -> gpu.launch ---===//
//
// The attention kernel of the NVVM path (docs/gpu.md): one thread block per
// (query tile, head, batch row), one thread per query row. The block stages
// each key tile of every level (and the values) in shared memory; each
// level >= 1's coarse score block is computed once per tile pair by the
// block, cooperatively, and read back by the rows it covers; level 0's
// scores, the online softmax and P V stay in the thread's registers. Key
// tiles above the diagonal (causal) or past the batch row's key length are
// not visited. With precision=tf32 the two products (Q0 K0^T and P V) run
// on the tensor cores instead (gpu.subgroup_mma, wmma m16n16k8 tf32), each
// warp on its 32 rows, the tile's scores and accumulator in shared memory.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"
#include "passes/transforms/Passes.h"

#include "dialect/HKTDialect.h"
#include "dialect/HKTOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <limits>

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMLOWERONLINEATTENTIONPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;

namespace {

/// The static shared-memory limit of one block without opting in.
constexpr int64_t kStaticSharedLimit = 48 * 1024;

/// Rows of query a warp owns in the tensor-core kernel (two 16-row
/// fragments).
constexpr int64_t kWarpRows = 32;

struct KernelShape {
  int64_t batch, heads, headDim, tq, tk;
  SmallVector<int64_t> factors;
  int64_t tileQ, tileK, chunk;
  /// TF32 tensor cores (gpu.subgroup_mma, wmma m16n16k8) for Q0 K0^T and
  /// P V; the block's scores and accumulator then live in shared memory.
  bool tensorCores = false;

  /// Rows of shared arrays holding level l >= 1's keys are padded by one
  /// word: the coarse-score loop reads them with a stride of one row per
  /// thread, which would otherwise hit one bank.
  int64_t sharedBytes() const {
    int64_t words = 2 * tileK * headDim; // level-0 keys, values
    if (tensorCores)
      words += tileQ * tileK + tileQ * headDim; // scores / P, accumulator
    for (size_t l = 1; l < factors.size(); ++l) {
      int64_t f = factors[l];
      words += (tileK / f) * (headDim + 1) + (tileQ / f) * headDim +
               (tileQ / f) * (tileK / f + 1);
    }
    // Each array may be padded to the 32-byte alignment of
    // hkt-nvvm-align-workgroup-memory.
    int64_t arrays = 2 + 3 * (factors.size() - 1) + (tensorCores ? 2 : 0);
    return 4 * words + 32 * arrays;
  }
};

class Lowering {
public:
  Lowering(OnlineAttentionOp op, const KernelShape &shape)
      : op(op), s(shape) {}
  LogicalResult run();

private:
  Value c(ImplicitLocOpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, v);
  }
  /// dst[r, c] = src[batch, base + r, col0 + c] for r < rows (0 past
  /// `limit` rows), the block's threads striding over the elements.
  void stageRows(ImplicitLocOpBuilder &b, Value dst, Value src, Value base,
                 int64_t rows, int64_t limit);

  OnlineAttentionOp op;
  KernelShape s;
  Value tid, batch, col0;
};

void Lowering::stageRows(ImplicitLocOpBuilder &b, Value dst, Value src,
                         Value base, int64_t rows, int64_t limit) {
  int64_t d = s.headDim;
  auto loop = scf::ForOp::create(b, tid, c(b, rows * d), c(b, s.tileQ));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value e = loop.getInductionVar();
  Value r = arith::DivUIOp::create(b, e, c(b, d));
  Value col = arith::RemUIOp::create(b, e, c(b, d));
  Value row = arith::AddIOp::create(b, base, r);
  Value inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row,
                                       c(b, limit));
  Value clamped = arith::MinUIOp::create(b, row, c(b, limit - 1));
  Value x = memref::LoadOp::create(
      b, src, ValueRange{batch, clamped, arith::AddIOp::create(b, col0, col)});
  Value zero = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
  x = arith::SelectOp::create(b, inside, x, zero);
  memref::StoreOp::create(b, x, dst, ValueRange{r, col});
}

LogicalResult Lowering::run() {
  MLIRContext *ctx = op.getContext();
  ImplicitLocOpBuilder b(op.getLoc(), op);
  int64_t d = s.headDim, levels = s.factors.size();
  Type f32 = b.getF32Type();
  auto buffer = [&](Value t, bool readOnly) -> Value {
    auto type = cast<RankedTensorType>(t.getType());
    return bufferization::ToBufferOp::create(
        b, MemRefType::get(type.getShape(), type.getElementType()), t,
        readOnly);
  };
  SmallVector<Value> queries, keys;
  for (Value q : op.getQueries())
    queries.push_back(buffer(q, true));
  int64_t qTiles = (s.tq + s.tileQ - 1) / s.tileQ;
  // The tensor cores load whole 16-row fragments of the level-0 queries
  // from global memory: rows padded to whole tiles.
  Value paddedQuery = queries[0];
  if (s.tensorCores && qTiles * s.tileQ != s.tq) {
    auto type = cast<RankedTensorType>(op.getQueries()[0].getType());
    auto padded = RankedTensorType::get(
        {s.batch, qTiles * s.tileQ, type.getDimSize(2)}, f32);
    Value zero = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
    Value pad = tensor::createPadHighOp(padded, op.getQueries()[0], zero,
                                        /*nofold=*/false, b.getLoc(), b);
    paddedQuery = buffer(pad, true);
  }
  for (Value k : op.getKeys())
    keys.push_back(buffer(k, true));
  Value value = buffer(op.getValue(), true);
  Value lengths = op.getLengths() ? buffer(op.getLengths(), true) : Value();
  Value accIn = buffer(op.getAcc(), true);
  Value maxIn = buffer(op.getMax(), true);
  Value sumIn = buffer(op.getSum(), true);
  SmallVector<Value> outs;
  for (Value init : {op.getAcc(), op.getMax(), op.getSum()}) {
    auto type = cast<RankedTensorType>(init.getType());
    outs.push_back(memref::AllocOp::create(
        b, MemRefType::get(type.getShape(), type.getElementType())));
  }

  // Workgroup memory: level-l keys, values, level >= 1 query tiles and
  // coarse score blocks.
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto shared = [&](int64_t rows, int64_t cols) {
    return MemRefType::get({rows, cols}, f32, MemRefLayoutAttrInterface(),
                           workgroup);
  };
  SmallVector<Type> sharedTypes;
  for (int64_t l = 0; l < levels; ++l)
    sharedTypes.push_back(shared(s.tileK / s.factors[l], l ? d + 1 : d));
  sharedTypes.push_back(shared(s.tileK, d));
  for (int64_t l = 1; l < levels; ++l) {
    sharedTypes.push_back(shared(s.tileQ / s.factors[l], d));
    sharedTypes.push_back(
        shared(s.tileQ / s.factors[l], s.tileK / s.factors[l] + 1));
  }
  if (s.tensorCores) {
    sharedTypes.push_back(shared(s.tileQ, s.tileK)); // scores, then P
    sharedTypes.push_back(shared(s.tileQ, d));       // the accumulator
  }

  auto launch = gpu::LaunchOp::create(b, c(b, qTiles), c(b, s.heads),
                                      c(b, s.batch), c(b, s.tileQ), c(b, 1),
                                      c(b, 1));
  Block &body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  gpu::TerminatorOp terminator = gpu::TerminatorOp::create(b);
  b.setInsertionPoint(terminator);
  // Workgroup allocas, not attributions: ownership-based deallocation gives
  // every memref block argument an ownership flag, which gpu.launch does
  // not accept. hkt-nvvm-host-staging turns them into attributions.
  SmallVector<Value> sharedArgs;
  for (Type type : sharedTypes)
    sharedArgs.push_back(memref::AllocaOp::create(b, cast<MemRefType>(type)));
  SmallVector<Value> keyTile(sharedArgs.begin(), sharedArgs.begin() + levels);
  Value valueTile = sharedArgs[levels];
  SmallVector<Value> queryTile(levels), scoreTile(levels);
  for (int64_t l = 1; l < levels; ++l) {
    queryTile[l] = sharedArgs[levels + 1 + 2 * (l - 1)];
    scoreTile[l] = sharedArgs[levels + 2 + 2 * (l - 1)];
  }
  Value fineScores, accTile;
  if (s.tensorCores) {
    fineScores = sharedArgs[sharedArgs.size() - 2];
    accTile = sharedArgs.back();
  }

  tid = launch.getThreadIds().x;
  Value qTile = launch.getBlockIds().x, head = launch.getBlockIds().y;
  batch = launch.getBlockIds().z;
  col0 = arith::MulIOp::create(b, head, c(b, d));
  Value i0 = arith::MulIOp::create(b, qTile, c(b, s.tileQ));
  Value row = arith::AddIOp::create(b, i0, tid);
  Value rowInside =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, c(b, s.tq));
  // Rows past the end compute on the last row and store nothing: every
  // thread reaches every barrier.
  Value rowC = arith::MinUIOp::create(b, row, c(b, s.tq - 1));

  // Coarse query tiles, staged once.
  for (int64_t l = 1; l < levels; ++l) {
    int64_t f = s.factors[l];
    auto rows = cast<MemRefType>(queries[l].getType()).getDimSize(1);
    stageRows(b, queryTile[l], queries[l],
              arith::DivUIOp::create(b, i0, c(b, f)), s.tileQ / f, rows);
  }

  // The row's state and level-0 query, in registers.
  SmallVector<Value> init;
  init.push_back(memref::LoadOp::create(b, maxIn, ValueRange{batch, head, rowC}));
  init.push_back(memref::LoadOp::create(b, sumIn, ValueRange{batch, head, rowC}));
  SmallVector<Value> q0;
  // Tensor cores: the warp's level-0 query fragments (2 x d / 8 of 16 x 8),
  // loaded once; the accumulator rows in shared memory.
  SmallVector<SmallVector<Value>> queryFragments;
  Value warpRow0;
  auto aType = gpu::MMAMatrixType::get({16, 8}, f32, "AOp");
  auto bType = gpu::MMAMatrixType::get({8, 16}, f32, "BOp");
  auto cType = gpu::MMAMatrixType::get({16, 16}, f32, "COp");
  auto lead = [&](int64_t n) { return b.getIndexAttr(n); };
  int64_t modelDim = s.heads * d;
  if (s.tensorCores) {
    warpRow0 = arith::MulIOp::create(
        b, arith::DivUIOp::create(b, tid, c(b, 32)), c(b, kWarpRows));
    for (int64_t rf = 0; rf < kWarpRows / 16; ++rf) {
      queryFragments.emplace_back();
      Value r = arith::AddIOp::create(
          b, i0, arith::AddIOp::create(b, warpRow0, c(b, 16 * rf)));
      for (int64_t kk = 0; kk < d / 8; ++kk)
        queryFragments.back().push_back(gpu::SubgroupMmaLoadMatrixOp::create(
            b, aType, paddedQuery,
            ValueRange{batch, r, arith::AddIOp::create(b, col0, c(b, 8 * kk))},
            lead(modelDim), nullptr));
    }
  }
  for (int64_t k = 0; k < d; ++k) {
    Value col = arith::AddIOp::create(b, col0, c(b, k));
    Value a = memref::LoadOp::create(b, accIn, ValueRange{batch, rowC, col});
    if (s.tensorCores) {
      memref::StoreOp::create(b, a, accTile, ValueRange{tid, c(b, k)});
      continue;
    }
    init.push_back(a);
    q0.push_back(
        memref::LoadOp::create(b, queries[0], ValueRange{batch, rowC, col}));
  }

  // Key tiles to visit: none above the block's last row (causal), none past
  // the batch row's key length.
  int64_t kTiles = (s.tk + s.tileK - 1) / s.tileK;
  Value numTiles = c(b, kTiles);
  if (op.getCausal()) {
    Value last = arith::MinUIOp::create(
        b, arith::AddIOp::create(b, i0, c(b, s.tileQ - 1)), c(b, s.tq - 1));
    numTiles = arith::MinUIOp::create(
        b, numTiles,
        arith::AddIOp::create(b, arith::DivUIOp::create(b, last, c(b, s.tileK)),
                              c(b, 1)));
  }
  Value keyLength;
  if (lengths) {
    Value raw = memref::LoadOp::create(b, lengths, ValueRange{batch});
    Value len = arith::IndexCastOp::create(b, b.getIndexType(), raw);
    len = arith::MaxSIOp::create(b, len, c(b, 0));
    keyLength = arith::MinSIOp::create(b, len, c(b, s.tk));
    Value tiles = arith::DivUIOp::create(
        b, arith::AddIOp::create(b, keyLength, c(b, s.tileK - 1)),
        c(b, s.tileK));
    numTiles = arith::MinUIOp::create(b, numTiles, tiles);
  }

  auto tileLoop = scf::ForOp::create(b, c(b, 0), numTiles, c(b, 1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tileLoop.getBody());
    Value j0 = arith::MulIOp::create(b, tileLoop.getInductionVar(),
                                     c(b, s.tileK));
    for (int64_t l = 0; l < levels; ++l) {
      int64_t f = s.factors[l];
      auto rows = cast<MemRefType>(keys[l].getType()).getDimSize(1);
      stageRows(b, keyTile[l], keys[l], arith::DivUIOp::create(b, j0, c(b, f)),
                s.tileK / f, rows);
    }
    stageRows(b, valueTile, value, j0, s.tileK, s.tk);
    gpu::BarrierOp::create(b);

    // Each level's coarse block, once per tile pair.
    for (int64_t l = 1; l < levels; ++l) {
      int64_t f = s.factors[l], cols = s.tileK / f;
      auto loop = scf::ForOp::create(b, tid, c(b, (s.tileQ / f) * cols),
                                     c(b, s.tileQ));
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(loop.getBody());
      Value e = loop.getInductionVar();
      Value I = arith::DivUIOp::create(b, e, c(b, cols));
      Value J = arith::RemUIOp::create(b, e, c(b, cols));
      Value acc = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
      for (int64_t k = 0; k < d; ++k) {
        Value x = memref::LoadOp::create(b, queryTile[l], ValueRange{I, c(b, k)});
        Value y = memref::LoadOp::create(b, keyTile[l], ValueRange{J, c(b, k)});
        acc = math::FmaOp::create(b, x, y, acc);
      }
      memref::StoreOp::create(b, acc, scoreTile[l], ValueRange{I, J});
    }
    if (levels > 1 && !s.tensorCores)
      gpu::BarrierOp::create(b);

    // The key j0 + jj of this row: its score if live, else -inf.
    Value negInf = arith::ConstantOp::create(
        b, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
    auto masked = [&](Value score, Value jj) {
      for (int64_t l = 1; l < levels; ++l) {
        Value f = c(b, s.factors[l]);
        Value coarse = memref::LoadOp::create(
            b, scoreTile[l],
            ValueRange{arith::DivUIOp::create(b, tid, f),
                       arith::DivUIOp::create(b, jj, f)});
        score = arith::AddFOp::create(b, score, coarse);
      }
      Value j = arith::AddIOp::create(b, j0, jj);
      Value live =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j, c(b, s.tk));
      if (op.getCausal())
        live = arith::AndIOp::create(
            b, live, arith::CmpIOp::create(b, arith::CmpIPredicate::ule, j, row));
      if (keyLength)
        live = arith::AndIOp::create(
            b, live,
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j, keyLength));
      return arith::SelectOp::create(b, live, score, negInf).getResult();
    };

    if (s.tensorCores) {
      // S0 = Q0 K0^T on the tensor cores, each warp its 32 rows.
      for (int64_t rf = 0; rf < kWarpRows / 16; ++rf)
        for (int64_t cf = 0; cf < s.tileK / 16; ++cf) {
          Value acc = gpu::SubgroupMmaConstantMatrixOp::create(
              b, cType, arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f)));
          for (int64_t kk = 0; kk < d / 8; ++kk) {
            Value keysT = gpu::SubgroupMmaLoadMatrixOp::create(
                b, bType, keyTile[0], ValueRange{c(b, 16 * cf), c(b, 8 * kk)},
                lead(d), b.getUnitAttr());
            // b_transpose: the mma's B layout must be the load's (col).
            acc = gpu::SubgroupMmaComputeOp::create(
                b, cType, queryFragments[rf][kk], keysT, acc, nullptr,
                b.getUnitAttr());
          }
          gpu::SubgroupMmaStoreMatrixOp::create(
              b, acc, fineScores,
              ValueRange{arith::AddIOp::create(b, warpRow0, c(b, 16 * rf)),
                         c(b, 16 * cf)},
              lead(s.tileK), nullptr);
        }
      gpu::BarrierOp::create(b);
      // The row's online update over the whole tile: P over its scores,
      // its accumulator row rescaled.
      ValueRange state = tileLoop.getRegionIterArgs();
      Value m = state[0], sum = state[1];
      SmallVector<Value> scores;
      Value tileMax = negInf;
      for (int64_t jj = 0; jj < s.tileK; ++jj) {
        Value fine = memref::LoadOp::create(b, fineScores,
                                            ValueRange{tid, c(b, jj)});
        scores.push_back(masked(fine, c(b, jj)));
        tileMax = arith::MaximumFOp::create(b, tileMax, scores.back());
      }
      Value mNew = arith::MaximumFOp::create(b, m, tileMax);
      Value scale = math::ExpOp::create(b, arith::SubFOp::create(b, m, mNew));
      Value newSum = arith::MulFOp::create(b, sum, scale);
      for (int64_t jj = 0; jj < s.tileK; ++jj) {
        Value p = math::ExpOp::create(
            b, arith::SubFOp::create(b, scores[jj], mNew));
        newSum = arith::AddFOp::create(b, newSum, p);
        memref::StoreOp::create(b, p, fineScores, ValueRange{tid, c(b, jj)});
      }
      for (int64_t k = 0; k < d; ++k) {
        Value o = memref::LoadOp::create(b, accTile, ValueRange{tid, c(b, k)});
        memref::StoreOp::create(b, arith::MulFOp::create(b, o, scale), accTile,
                                ValueRange{tid, c(b, k)});
      }
      gpu::BarrierOp::create(b);
      // acc += P V on the tensor cores.
      for (int64_t rf = 0; rf < kWarpRows / 16; ++rf) {
        Value r = arith::AddIOp::create(b, warpRow0, c(b, 16 * rf));
        for (int64_t nf = 0; nf < d / 16; ++nf) {
          Value acc = gpu::SubgroupMmaLoadMatrixOp::create(
              b, cType, accTile, ValueRange{r, c(b, 16 * nf)}, lead(d), nullptr);
          for (int64_t kk = 0; kk < s.tileK / 8; ++kk) {
            Value p = gpu::SubgroupMmaLoadMatrixOp::create(
                b, aType, fineScores, ValueRange{r, c(b, 8 * kk)},
                lead(s.tileK), nullptr);
            Value v = gpu::SubgroupMmaLoadMatrixOp::create(
                b, bType, valueTile, ValueRange{c(b, 8 * kk), c(b, 16 * nf)},
                lead(d), nullptr);
            acc = gpu::SubgroupMmaComputeOp::create(b, cType, p, v, acc,
                                                    nullptr, nullptr);
          }
          gpu::SubgroupMmaStoreMatrixOp::create(
              b, acc, accTile, ValueRange{r, c(b, 16 * nf)}, lead(d), nullptr);
        }
      }
      gpu::BarrierOp::create(b);
      scf::YieldOp::create(b, ValueRange{mNew, newSum});
    } else {
    // The row's online update, `chunk` keys at a time (their scores in
    // registers, one rescaling per chunk).
    auto chunkLoop = scf::ForOp::create(b, c(b, 0), c(b, s.tileK),
                                        c(b, s.chunk),
                                        tileLoop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(chunkLoop.getBody());
      Value jc = chunkLoop.getInductionVar();
      ValueRange state = chunkLoop.getRegionIterArgs();
      Value m = state[0], sum = state[1];
      SmallVector<Value> scores, jjs;
      Value tileMax = negInf;
      for (int64_t u = 0; u < s.chunk; ++u) {
        Value jj = arith::AddIOp::create(b, jc, c(b, u));
        jjs.push_back(jj);
        Value score = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
        for (int64_t k = 0; k < d; ++k) {
          Value y = memref::LoadOp::create(b, keyTile[0], ValueRange{jj, c(b, k)});
          score = math::FmaOp::create(b, q0[k], y, score);
        }
        score = masked(score, jj);
        scores.push_back(score);
        tileMax = arith::MaximumFOp::create(b, tileMax, score);
      }
      Value mNew = arith::MaximumFOp::create(b, m, tileMax);
      Value scale = math::ExpOp::create(b, arith::SubFOp::create(b, m, mNew));
      SmallVector<Value> p;
      Value newSum = arith::MulFOp::create(b, sum, scale);
      for (Value score : scores) {
        p.push_back(math::ExpOp::create(b, arith::SubFOp::create(b, score, mNew)));
        newSum = arith::AddFOp::create(b, newSum, p.back());
      }
      SmallVector<Value> next{mNew, newSum};
      for (int64_t k = 0; k < d; ++k) {
        Value o = arith::MulFOp::create(b, state[2 + k], scale);
        for (int64_t u = 0; u < s.chunk; ++u) {
          Value v = memref::LoadOp::create(b, valueTile, ValueRange{jjs[u], c(b, k)});
          o = math::FmaOp::create(b, p[u], v, o);
        }
        next.push_back(o);
      }
      scf::YieldOp::create(b, next);
    }
    // The next tile overwrites the shared arrays.
    gpu::BarrierOp::create(b);
    scf::YieldOp::create(b, chunkLoop.getResults());
    }
  }

  auto store = scf::IfOp::create(b, rowInside, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&store.getThenRegion().front());
    ValueRange state = tileLoop.getResults();
    memref::StoreOp::create(b, state[0], outs[1], ValueRange{batch, head, row});
    memref::StoreOp::create(b, state[1], outs[2], ValueRange{batch, head, row});
    for (int64_t k = 0; k < d; ++k) {
      Value o = s.tensorCores ? memref::LoadOp::create(b, accTile,
                                                       ValueRange{tid, c(b, k)})
                                    .getResult()
                              : state[2 + k];
      memref::StoreOp::create(
          b, o, outs[0],
          ValueRange{batch, row, arith::AddIOp::create(b, col0, c(b, k))});
    }
  }

  b.setInsertionPointAfter(launch);
  SmallVector<Value> results;
  for (auto [out, result] : llvm::zip(outs, op.getResults()))
    results.push_back(bufferization::ToTensorOp::create(
        b, result.getType(), out, /*restrict=*/true, /*writable=*/true));
  op.replaceAllUsesWith(results);
  op.erase();
  return success();
}

/// Checks what the kernel supports and picks its tiles.
FailureOr<KernelShape> kernelShape(OnlineAttentionOp op, int64_t tileQ,
                                   int64_t tileK, bool tensorCores) {
  auto fail = [&](const Twine &why) {
    return op.emitOpError("cannot be lowered for the GPU: ") << why;
  };
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      continue;
    if (!type.hasStaticShape())
      return fail("dynamic shapes are not supported yet");
    if (!type.getElementType().isF32() && v != op.getLengths())
      return fail("only f32 is supported (got ") << type.getElementType() << ")";
  }
  if (op.getQueryOffset())
    return fail("an op with offsets (a tile of a larger op) is not supported");
  auto acc = cast<RankedTensorType>(op.getAcc().getType());
  auto max = cast<RankedTensorType>(op.getMax().getType());
  KernelShape s;
  s.batch = acc.getDimSize(0);
  s.tq = acc.getDimSize(1);
  s.heads = max.getDimSize(1);
  s.tk = cast<RankedTensorType>(op.getValue().getType()).getDimSize(1);
  s.headDim = acc.getDimSize(2) / s.heads;
  s.factors.assign(op.getFactors().begin(), op.getFactors().end());
  if (s.headDim > 128)
    return fail("head width ") << s.headDim
                               << " > 128 (the row state lives in registers)";
  int64_t lcm = 1;
  for (int64_t f : s.factors)
    lcm = std::lcm(lcm, f);
  s.tensorCores = tensorCores;
  s.tileQ = tileQ;
  s.tileK = tileK;
  int64_t unitQ = lcm, unitK = lcm;
  if (tensorCores) {
    // Whole warps of 32 rows, whole 16-key fragments, head widths in whole
    // 16-column fragments.
    if (s.headDim % 16)
      return fail("tf32 tensor cores need a head width that is a multiple "
                  "of 16 (got ")
             << s.headDim << "); use --precision f32";
    unitQ = std::lcm(lcm, kWarpRows);
    unitK = std::lcm(lcm, int64_t(16));
    if (unitQ > 128)
      return fail("tf32 tensor cores need query tiles of whole warps and "
                  "whole coarse rows: level factors up to ")
             << s.factors.back() << " make them " << unitQ
             << " rows; use --precision f32";
  }
  auto roundTo = [](int64_t x, int64_t m) { return (x + m - 1) / m * m; };
  s.tileQ = roundTo(s.tileQ, unitQ);
  s.tileK = roundTo(s.tileK, unitK);
  if (s.tileQ > 1024)
    return fail("tile-q ") << s.tileQ << " > 1024 threads per block";
  // Smaller key tiles, then smaller query tiles, until the shared arrays
  // fit.
  while (s.sharedBytes() > kStaticSharedLimit && s.tileK > unitK)
    s.tileK = std::max(unitK, s.tileK / 2 / unitK * unitK);
  while (s.sharedBytes() > kStaticSharedLimit && s.tileQ > unitQ)
    s.tileQ = std::max(unitQ, s.tileQ / 2 / unitQ * unitQ);
  if (s.sharedBytes() > kStaticSharedLimit)
    return fail("even tiles of ")
           << s.tileQ << " x " << s.tileK << " need " << s.sharedBytes()
           << " bytes of shared memory, more than the 48 KiB a block has"
           << (tensorCores ? " (head width " + std::to_string(s.headDim) +
                                 "); use --precision f32"
                           : std::string());
  s.chunk = std::gcd(s.tileK, int64_t(16));
  return s;
}

struct HktNvvmLowerOnlineAttentionPass
    : public mlir::hkt::impl::HktNvvmLowerOnlineAttentionPassBase<
          HktNvvmLowerOnlineAttentionPass> {
  using HktNvvmLowerOnlineAttentionPassBase::HktNvvmLowerOnlineAttentionPassBase;
  void runOnOperation() override {
    if (tileQ < 1 || tileK < 1) {
      getOperation()->emitError("tile-q and tile-k must be >= 1");
      return signalPassFailure();
    }
    if (precision != "f32" && precision != "tf32") {
      getOperation()->emitError("unknown precision '")
          << precision << "' (f32, or tf32 for the tensor cores)";
      return signalPassFailure();
    }
    // hkt.fused_attention -> hkt.online_attention and its normalisation.
    if (failed(decomposeAggregatedOps(getOperation(), [](Operation *op) {
          return isa<FusedAttentionOp>(op);
        })))
      return signalPassFailure();
    SmallVector<OnlineAttentionOp> ops;
    getOperation()->walk([&](OnlineAttentionOp op) { ops.push_back(op); });
    for (OnlineAttentionOp op : ops) {
      FailureOr<KernelShape> shape =
          kernelShape(op, tileQ, tileK, precision == "tf32");
      if (failed(shape) || failed(Lowering(op, *shape).run()))
        return signalPassFailure();
    }
    WalkResult backward = getOperation()->walk([](OnlineAttentionBackwardOp op) {
      op.emitOpError("has no GPU lowering yet (the GPU path is inference only)");
      return WalkResult::interrupt();
    });
    if (backward.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
