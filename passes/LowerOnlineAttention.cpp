//===- LowerOnlineAttention.cpp - hkt-lower-online-attention --------------===//
//
// hkt.online_attention -> scf.forall (batch, head, query tile) x scf.for (key
// tile) over small static linalg ops (see Passes.td). Never materialises more
// than a tile-q x tile-k block of scores.
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "passes/LinalgBuilders.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

#include <numeric>

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTLOWERONLINEATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;

namespace {

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/// Builds the loop nest for one op; every shape is static.
class Lowering {
public:
  Lowering(OnlineAttentionOp op, RewriterBase &rw, int64_t tileQ, int64_t tileK)
      : op(op), rw(rw), loc(op.getLoc()), ctx(op.getContext()),
        requestedQ(tileQ), requestedK(tileK) {}

  LogicalResult run();

private:
  RankedTensorType type(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, elt);
  }
  Value index(int64_t v) {
    return arith::ConstantIndexOp::create(rw, loc, v);
  }
  Value constant(double v) {
    return arith::ConstantOp::create(rw, loc, elt, rw.getFloatAttr(elt, v));
  }
  Value filled(ArrayRef<int64_t> shape, Value value) {
    Value empty = tensor::EmptyOp::create(rw, loc, shape, elt);
    return linalg::FillOp::create(rw, loc, value, empty).getResult(0);
  }
  /// One linalg.generic writing `out`; `body` computes the yielded value
  /// from the block arguments (the inputs, then `out`).
  Value generic(ValueRange ins, Value out, ArrayRef<AffineMap> maps,
                ArrayRef<utils::IteratorType> iterators,
                function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    return linalg::GenericOp::create(
               rw, loc, out.getType(), ins, ValueRange{out}, maps, iterators,
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 linalg::YieldOp::create(nb, nl, body(nb, nl, args));
               })
        .getResult(0);
  }
  AffineMap map(unsigned dims, ArrayRef<AffineExpr> results) {
    return indexingMap(dims, results, ctx);
  }
  /// Zero-pads dimension `dim` of `v` up to `size` (at the end).
  Value padTo(Value v, unsigned dim, int64_t size, Value padValue) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getDimSize(dim) == size)
      return v;
    SmallVector<int64_t> shape(t.getShape());
    shape[dim] = size;
    return tensor::createPadHighOp(type(shape), v, padValue, /*nofold=*/false,
                                   loc, rw);
  }
  /// A rank-reduced 2-D slice [rows, cols] of a 3-D tensor at
  /// [b, row0, col0] (or [b, h, row0] for the 1-D per-row statistics).
  Value slice(Value src, ArrayRef<OpFoldResult> offsets,
              ArrayRef<int64_t> sizes, ArrayRef<int64_t> resultShape) {
    SmallVector<OpFoldResult> sz, st;
    for (int64_t s : sizes) {
      sz.push_back(rw.getIndexAttr(s));
      st.push_back(rw.getIndexAttr(1));
    }
    return tensor::ExtractSliceOp::create(rw, loc, type(resultShape), src,
                                          offsets, sz, st);
  }

  Value scoresForTile(Value b, Value h, Value kt, ArrayRef<Value> queryTiles);
  Value broadcastBlock(Value coarse, int64_t ratio);
  Value scoresInOrder(function_ref<Value(unsigned, Value)> levelBlock);
  Value mask(Value scores, Value i0, Value j0, Value keyLength);
  Value packTiles(Value src, int64_t tileLen, ArrayRef<int64_t> radices,
                  bool transposed);
  ArrayRef<int64_t> radicesBelow(int64_t factor);

  OnlineAttentionOp op;
  RewriterBase &rw;
  Location loc;
  MLIRContext *ctx;
  int64_t requestedQ, requestedK;
  Type elt;
  int64_t tileQ = 0, tileK = 0, headDim = 0;
  SmallVector<int64_t> factors;
  SmallVector<Value> keys; // padded, packed (packTiles)
  /// The key order inside a tile (see packTiles): the radices
  /// s_1 .. s_m of the chain 1 | f_1 | ... | f_m of distinct factors, and
  /// for each position of the reordered tile the key's original offset.
  /// Empty when the factors form no chain (or L = 1): keys stay in order.
  SmallVector<int64_t> radices, chainFactors;
  SmallVector<int64_t> originalOffset;
};

/// The radices above level factor `factor` (s_{k+1} .. s_m where
/// s_1 ... s_k = factor).
ArrayRef<int64_t> Lowering::radicesBelow(int64_t factor) {
  if (radices.empty())
    return {};
  size_t k = 0;
  for (int64_t prod = 1; prod != factor; ++k)
    prod *= radices[k];
  return ArrayRef<int64_t>(radices).drop_front(k);
}

/// Packs a B x N x D operand for the tile loops: head-major, so that every
/// tile the loops read is one contiguous block (strided tile rows 2-16 KiB
/// apart map to a few cache sets and evict each other), with the keys
/// inside every tile of `tileLen` reordered.
///
/// The reordering makes each level's f x f broadcast f contiguous column
/// blocks. A key offset j = c * P + r inside the tile (P = prod radices, r
/// in mixed radix with digits r_0 (base s_1, least significant) ..
/// r_{m-1}) moves to the row-major position of (r_0, r_1, ..., r_{m-1},
/// c). The f_k keys that share a level-k coarse key differ only in r_0 ..
/// r_{k-1}, so they sit at y * (tileLen / f_k) + q, y < f_k; and q is
/// exactly where this same reordering (radices s_{k+1} .. s_m, tiles of
/// tileLen / f_k) puts that coarse key. Softmax and P V sum over keys, so
/// any order gives the same result as long as values are reordered alike.
///
/// Result: B x H x tiles x d x tileLen (`transposed`, keys: each tile a
/// d x tileLen matrix) or B x H x N x d (queries and values).
Value Lowering::packTiles(Value src, int64_t tileLen, ArrayRef<int64_t> rad,
                          bool transposed) {
  auto t = cast<RankedTensorType>(src.getType());
  int64_t batch = t.getDimSize(0), n = t.getDimSize(1),
          heads = t.getDimSize(2) / headDim;
  int64_t period = 1;
  for (int64_t r : rad)
    period *= r;
  int64_t m = rad.size();
  // B x tiles x c x r_{m-1} x ... x r_0 x H x d
  SmallVector<int64_t> shape = {batch, n / tileLen, tileLen / period};
  for (int64_t r : llvm::reverse(rad))
    shape.push_back(r);
  shape.append({heads, headDim});
  int64_t hDim = 3 + m, dDim = 4 + m;
  SmallVector<ReassociationIndices> split = {
      {0}, llvm::to_vector(llvm::seq<int64_t>(1, hDim)), {hDim, dDim}};
  Value expanded =
      tensor::ExpandShapeOp::create(rw, loc, type(shape), src, split);
  // -> B x H x tiles x [d x] r_0 x ... x r_{m-1} x c [x d]
  SmallVector<int64_t> perm = {0, hDim, 1};
  if (transposed)
    perm.push_back(dDim);
  for (int64_t i = 0; i < m; ++i)
    perm.push_back(2 + m - i);
  perm.push_back(2);
  if (!transposed)
    perm.push_back(dDim);
  SmallVector<int64_t> permShape;
  for (int64_t p : perm)
    permShape.push_back(shape[p]);
  Value init = tensor::EmptyOp::create(rw, loc, permShape, elt);
  Value moved =
      linalg::TransposeOp::create(rw, loc, expanded, init, perm).getResult()[0];
  SmallVector<ReassociationIndices> merge;
  SmallVector<int64_t> outShape;
  if (transposed) {
    merge = {{0}, {1}, {2}, {3}, llvm::to_vector(llvm::seq<int64_t>(4, 5 + m))};
    outShape = {batch, heads, n / tileLen, headDim, tileLen};
  } else {
    merge = {{0}, {1}, llvm::to_vector(llvm::seq<int64_t>(2, 4 + m)), {4 + m}};
    outShape = {batch, heads, n, headDim};
  }
  return tensor::CollapseShapeOp::create(rw, loc, type(outShape), moved, merge);
}

/// S[i, j] = sum_l qtile_l[i / f_l] . ktile_l[j / f_l]: the level-l block is
/// computed once at coarse resolution and broadcast over f_l x f_l.
Value Lowering::scoresForTile(Value b, Value h, Value kt,
                              ArrayRef<Value> queryTiles) {
  Value zero = constant(0.0);
  auto levelBlock = [&](unsigned l, Value target) {
    int64_t cols = tileK / factors[l];
    Value keyTile = slice(keys[l], {b, h, kt, index(0), index(0)},
                          {1, 1, 1, headDim, cols}, {headDim, cols});
    return linalg::MatmulOp::create(rw, loc, ValueRange{queryTiles[l], keyTile},
                                    ValueRange{target})
        .getResult(0);
  };
  if (radices.empty())
    return scoresInOrder(levelBlock);
  // Reordered keys (packTiles): coarsest to finest, each factor's block
  // starts as the next coarser block broadcast into it and accumulates its
  // levels' q k^T on top; the finest (factor 1) block is S.
  Value block;
  for (size_t idx = chainFactors.size(); idx-- > 0;) {
    int64_t f = chainFactors[idx];
    block = block ? broadcastBlock(block, chainFactors[idx + 1] / f)
                  : filled({tileQ / f, tileK / f}, zero);
    for (unsigned l = 0; l < factors.size(); ++l)
      if (factors[l] == f)
        block = levelBlock(l, block);
  }
  return block;
}

/// The block of the next finer factor, from `coarse` (R x n): row i gets
/// coarse row i / ratio in each of its `ratio` column blocks y * n .. y * n
/// + n (see packTiles). One contiguous row segment at a time: a 4-D
/// broadcast generic, or a 2-D one on an expanded row, sends MLIR 22's
/// vector patterns into an endless loop.
Value Lowering::broadcastBlock(Value coarse, int64_t ratio) {
  auto coarseType = cast<RankedTensorType>(coarse.getType());
  int64_t rows = coarseType.getDimSize(0) * ratio,
          n = coarseType.getDimSize(1);
  Value fine = tensor::EmptyOp::create(rw, loc, {rows, n * ratio}, elt);
  auto unit = [&](int64_t size) {
    return SmallVector<OpFoldResult>{rw.getIndexAttr(1), rw.getIndexAttr(size)};
  };
  SmallVector<OpFoldResult> strides = unit(1);
  auto rowLoop = scf::ForOp::create(
      rw, loc, index(0), index(rows), index(1), ValueRange{fine},
      [&](OpBuilder &, Location, Value i, ValueRange rowIter) {
        Value a = arith::DivUIOp::create(rw, loc, i, index(ratio));
        Value segment = slice(coarse, {a, rw.getIndexAttr(0)}, {1, n}, {n});
        auto colLoop = scf::ForOp::create(
            rw, loc, index(0), index(n * ratio), index(n), rowIter,
            [&](OpBuilder &, Location, Value col, ValueRange iter) {
              SmallVector<OpFoldResult> offsets = {i, col};
              Value part = slice(iter[0], offsets, {1, n}, {n});
              Value copied = linalg::CopyOp::create(
                                 rw, loc, ValueRange{segment}, ValueRange{part})
                                 .getResult(0);
              scf::YieldOp::create(
                  rw, loc,
                  ValueRange{tensor::InsertSliceOp::create(
                      rw, loc, copied, iter[0], offsets, unit(n), strides)});
            });
        scf::YieldOp::create(rw, loc, colLoop.getResults());
      });
  return rowLoop.getResult(0);
}

/// Keys in order (factors that form no divisibility chain): each level's
/// block is added to the (tileQ/f, f, tileK/f, f) view of the scores.
Value Lowering::scoresInOrder(function_ref<Value(unsigned, Value)> levelBlock) {
  Value zero = constant(0.0);
  Value scores = levelBlock(0, filled({tileQ, tileK}, zero));
  for (unsigned l = 1; l < factors.size(); ++l) {
    int64_t f = factors[l];
    Value block = levelBlock(l, filled({tileQ / f, tileK / f}, zero));
    SmallVector<ReassociationIndices> split = {{0, 1}, {2, 3}};
    Value blocks = tensor::ExpandShapeOp::create(
        rw, loc, type({tileQ / f, f, tileK / f, f}), scores, split);
    AffineExpr a, x, c, y;
    bindDims(ctx, a, x, c, y);
    Value added = generic(
        block, blocks, {map(4, {a, c}), map(4, {a, x, c, y})},
        {kPar, kPar, kPar, kPar},
        [](OpBuilder &nb, Location nl, ValueRange args) -> Value {
          return arith::AddFOp::create(nb, nl, args[1], args[0]);
        });
    scores = tensor::CollapseShapeOp::create(rw, loc, added, split);
  }
  return scores;
}

/// -inf where the key is past the row's key length (padding included) or,
/// when causal, after the query.
Value Lowering::mask(Value scores, Value i0, Value j0, Value keyLength) {
  AffineExpr i, j;
  bindDims(ctx, i, j);
  auto fType = cast<FloatType>(elt);
  Value negInf = arith::ConstantOp::create(
      rw, loc, elt,
      rw.getFloatAttr(elt, APFloat::getInf(fType.getFloatSemantics(), true)));
  bool causal = op.getCausal();
  SmallVector<Value> ins;
  SmallVector<AffineMap> maps;
  if (!originalOffset.empty()) {
    // Reordered keys: position j holds the key at j0 + originalOffset[j].
    auto tableType = RankedTensorType::get({tileK}, rw.getIndexType());
    ins.push_back(arith::ConstantOp::create(
        rw, loc, DenseElementsAttr::get(
                     tableType, llvm::map_to_vector(originalOffset, [&](int64_t v) {
                       return Attribute(rw.getIndexAttr(v));
                     }))));
    maps.push_back(map(2, {j}));
  }
  maps.push_back(map(2, {i, j}));
  bool reordered = !ins.empty();
  return linalg::GenericOp::create(
             rw, loc, scores.getType(), ins, ValueRange{scores}, maps,
             {kPar, kPar},
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value row = arith::AddIOp::create(
                   nb, nl, i0, linalg::IndexOp::create(nb, nl, 0));
               Value col = arith::AddIOp::create(
                   nb, nl, j0,
                   reordered ? args[0]
                             : Value(linalg::IndexOp::create(nb, nl, 1)));
               Value drop = arith::CmpIOp::create(
                   nb, nl, arith::CmpIPredicate::uge, col, keyLength);
               if (causal)
                 drop = arith::OrIOp::create(
                     nb, nl, drop,
                     arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ugt,
                                           col, row));
               linalg::YieldOp::create(
                   nb, nl,
                   arith::SelectOp::create(nb, nl, drop, negInf, args.back())
                       .getResult());
             })
      .getResult(0);
}

LogicalResult Lowering::run() {
  auto accType = cast<RankedTensorType>(op.getAcc().getType());
  auto maxType = cast<RankedTensorType>(op.getMax().getType());
  auto valueType = cast<RankedTensorType>(op.getValue().getType());
  for (Value v : op->getOperands())
    if (!cast<RankedTensorType>(v.getType()).hasStaticShape())
      return op.emitOpError("lowering needs static shapes");
  elt = accType.getElementType();
  int64_t batch = accType.getDimSize(0), tq = accType.getDimSize(1),
          dim = accType.getDimSize(2), heads = maxType.getDimSize(1),
          tk = valueType.getDimSize(1);
  headDim = dim / heads;
  factors.assign(op.getFactors().begin(), op.getFactors().end());
  int64_t align = 1;
  for (int64_t f : factors)
    align = std::lcm(align, f);
  // Tiles hold whole coarse blocks, and need not exceed the (padded) sequence.
  tileQ = roundUp(std::min(requestedQ, roundUp(tq, align)), align);
  tileK = roundUp(std::min(requestedK, roundUp(tk, align)), align);
  int64_t tqPad = roundUp(tq, tileQ), tkPad = roundUp(tk, tileK);

  // Keys are reordered inside tiles when the distinct factors form a
  // divisibility chain (always, for stride^l); otherwise the broadcast
  // stays strided.
  SmallVector<int64_t> chain(factors);
  llvm::sort(chain);
  chain.erase(std::unique(chain.begin(), chain.end()), chain.end());
  bool isChain = chain.size() > 1;
  for (size_t i = 1; i < chain.size(); ++i)
    isChain &= chain[i] % chain[i - 1] == 0;
  if (isChain) {
    chainFactors = chain;
    for (size_t i = 1; i < chain.size(); ++i)
      radices.push_back(chain[i] / chain[i - 1]);
    // originalOffset[position] = key offset, from the mixed-radix digits.
    int64_t period = chain.back(), perTile = tileK / period;
    originalOffset.assign(tileK, 0);
    for (int64_t j = 0; j < tileK; ++j) {
      int64_t c = j / period, r = j % period, pos = 0;
      for (int64_t radix : radices) {
        pos = pos * radix + r % radix;
        r /= radix;
      }
      originalOffset[pos * perTile + c] = j;
    }
  }

  rw.setInsertionPoint(op);
  Value zero = constant(0.0);
  Value lowest = arith::ConstantOp::create(
      rw, loc, elt,
      rw.getFloatAttr(elt, APFloat::getLargest(
                               cast<FloatType>(elt).getFloatSemantics(), true)));
  // Packed once, read tile by tile (packTiles): queries B x H x Tq_l x d,
  // keys B x H x tiles x d x (tile-k / f_l), values B x H x Tk x d.
  SmallVector<Value> queries;
  for (auto [l, f] : llvm::enumerate(factors)) {
    Value query = padTo(op.getQueries()[l], 1, tqPad / f, zero);
    queries.push_back(packTiles(query, tqPad / f, {}, /*transposed=*/false));
    Value key = padTo(op.getKeys()[l], 1, tkPad / f, zero);
    keys.push_back(
        packTiles(key, tileK / f, radicesBelow(f), /*transposed=*/true));
  }
  Value value = packTiles(padTo(op.getValue(), 1, tkPad, zero), tileK,
                          radices, /*transposed=*/false);
  Value acc = padTo(op.getAcc(), 1, tqPad, zero);
  Value max = padTo(op.getMax(), 2, tqPad, lowest);
  Value sum = padTo(op.getSum(), 2, tqPad, zero);

  SmallVector<OpFoldResult> bounds = {rw.getIndexAttr(batch),
                                      rw.getIndexAttr(heads),
                                      rw.getIndexAttr(tqPad / tileQ)};
  auto forall = scf::ForallOp::create(rw, loc, bounds,
                                      ValueRange{acc, max, sum}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(rw);
    rw.setInsertionPointToStart(forall.getBody());
    SmallVector<Value> ivs = forall.getInductionVars();
    Value b = ivs[0], h = ivs[1], qt = ivs[2];
    auto outs = forall.getRegionOutArgs();
    Value i0 = arith::MulIOp::create(rw, loc, qt, index(tileQ));
    Value col0 = arith::MulIOp::create(rw, loc, h, index(headDim));

    SmallVector<Value> queryTiles;
    for (auto [l, f] : llvm::enumerate(factors)) {
      Value row0 = arith::DivUIOp::create(rw, loc, i0, index(f));
      queryTiles.push_back(slice(queries[l], {b, h, row0, index(0)},
                                 {1, 1, tileQ / f, headDim},
                                 {tileQ / f, headDim}));
    }
    // The accumulator tile is carried in a contiguous buffer of its own
    // (its rows in the B x T x D result are D apart).
    Value accTile = linalg::CopyOp::create(
                        rw, loc,
                        ValueRange{slice(outs[0], {b, i0, col0},
                                         {1, tileQ, headDim},
                                         {tileQ, headDim})},
                        ValueRange{tensor::EmptyOp::create(
                            rw, loc, {tileQ, headDim}, elt)})
                        .getResult(0);
    Value maxTile = slice(outs[1], {b, h, i0}, {1, 1, tileQ}, {tileQ});
    Value sumTile = slice(outs[2], {b, h, i0}, {1, 1, tileQ}, {tileQ});

    // Keys at or past this length are masked: the row's key length, or the
    // real sequence (padding).
    Value keyLength = index(tk);
    if (Value lengths = op.getLengths()) {
      Value len = tensor::ExtractOp::create(rw, loc, lengths, ValueRange{b});
      len = arith::IndexCastOp::create(rw, loc, rw.getIndexType(), len);
      keyLength = arith::MinUIOp::create(rw, loc, len, keyLength);
    }
    // Visit only key tiles that hold an unmasked key for some row.
    Value keyEnd = keyLength;
    if (op.getCausal())
      keyEnd = arith::MinUIOp::create(
          rw, loc, keyEnd,
          arith::AddIOp::create(rw, loc, i0, index(tileQ)));
    Value numTiles = arith::CeilDivUIOp::create(rw, loc, keyEnd, index(tileK));

    // Key tiles below the diagonal and wholly inside the key length need
    // no mask: a first loop visits those, a second the rest.
    Value unmaskedEnd = arith::DivUIOp::create(rw, loc, keyLength, index(tileK));
    if (op.getCausal())
      unmaskedEnd = arith::MinUIOp::create(
          rw, loc, unmaskedEnd,
          arith::DivUIOp::create(
              rw, loc, arith::AddIOp::create(rw, loc, i0, index(1)),
              index(tileK)));
    unmaskedEnd = arith::MinUIOp::create(rw, loc, unmaskedEnd, numTiles);
    auto keyLoop = [&](Value begin, Value end, ValueRange init, bool masked) {
      return scf::ForOp::create(
        rw, loc, begin, end, index(1), init,
        [&](OpBuilder &, Location, Value kt, ValueRange iter) {
          Value j0 = arith::MulIOp::create(rw, loc, kt, index(tileK));
          Value scores = scoresForTile(b, h, kt, queryTiles);
          if (masked)
            scores = mask(scores, i0, j0, keyLength);

          AffineExpr i, j;
          bindDims(ctx, i, j);
          // m' = max(m, max_j S), first into a temporary: the old m is
          // still needed for the correction factor, and each carried value
          // must end up back in its own buffer (bufferization in place).
          Value maxCopy =
              linalg::CopyOp::create(
                  rw, loc, ValueRange{iter[1]},
                  ValueRange{tensor::EmptyOp::create(rw, loc, {tileQ}, elt)})
                  .getResult(0);
          using nb_t = OpBuilder &;
          Value maxTmp = generic(
              scores, maxCopy, {map(2, {i, j}), map(2, {i})}, {kPar, kRed},
              [](nb_t nb, Location nl, ValueRange a) -> Value {
                return arith::MaximumFOp::create(nb, nl, a[0], a[1]);
              });
          // P = exp(S - m')
          Value probs = generic(
              maxTmp, scores, {map(2, {i}), map(2, {i, j})}, {kPar, kPar},
              [](nb_t nb, Location nl, ValueRange a) -> Value {
                return math::ExpOp::create(
                    nb, nl, arith::SubFOp::create(nb, nl, a[1], a[0]));
              });
          // corr = exp(m - m'); sum' = sum * corr + sum_j P
          Value corr = generic(
              {iter[1], maxTmp}, tensor::EmptyOp::create(rw, loc, {tileQ}, elt),
              {map(1, {i}), map(1, {i}), map(1, {i})}, {kPar},
              [](nb_t nb, Location nl, ValueRange a) -> Value {
                return math::ExpOp::create(
                    nb, nl, arith::SubFOp::create(nb, nl, a[0], a[1]));
              });
          auto mul = [](nb_t nb, Location nl, ValueRange a) -> Value {
            return arith::MulFOp::create(nb, nl, a[1], a[0]);
          };
          Value scaledSum = generic(corr, iter[2], {map(1, {i}), map(1, {i})},
                                    {kPar}, mul);
          Value newSum = generic(
              probs, scaledSum, {map(2, {i, j}), map(2, {i})}, {kPar, kRed},
              [](nb_t nb, Location nl, ValueRange a) -> Value {
                return arith::AddFOp::create(nb, nl, a[1], a[0]);
              });
          // acc' = acc * corr + P V
          Value scaledAcc = generic(corr, iter[0],
                                    {map(2, {i}), map(2, {i, j})},
                                    {kPar, kPar}, mul);
          Value valueTile = slice(value, {b, h, j0, index(0)},
                                  {1, 1, tileK, headDim}, {tileK, headDim});
          Value newAcc = linalg::MatmulOp::create(
                             rw, loc, ValueRange{probs, valueTile},
                             ValueRange{scaledAcc})
                             .getResult(0);
          Value newMax =
              linalg::CopyOp::create(rw, loc, ValueRange{maxTmp},
                                     ValueRange{iter[1]})
                  .getResult(0);
          scf::YieldOp::create(rw, loc, ValueRange{newAcc, newMax, newSum});
        });
    };
    auto unmasked = keyLoop(index(0), unmaskedEnd,
                            ValueRange{accTile, maxTile, sumTile}, false);
    auto loop = keyLoop(unmaskedEnd, numTiles, unmasked.getResults(), true);

    rw.setInsertionPointToStart(forall.getTerminator().getBody());
    auto insert = [&](Value tile, Value dest, ArrayRef<OpFoldResult> offsets,
                      ArrayRef<int64_t> sizes) {
      SmallVector<OpFoldResult> sz, st;
      for (int64_t s : sizes) {
        sz.push_back(rw.getIndexAttr(s));
        st.push_back(rw.getIndexAttr(1));
      }
      tensor::ParallelInsertSliceOp::create(rw, loc, tile, dest, offsets, sz,
                                            st);
    };
    insert(loop.getResult(0), outs[0], {b, i0, col0}, {1, tileQ, headDim});
    insert(loop.getResult(1), outs[1], {b, h, i0}, {1, 1, tileQ});
    insert(loop.getResult(2), outs[2], {b, h, i0}, {1, 1, tileQ});
  }

  // Drop the padded query rows.
  auto unpad = [&](Value padded, RankedTensorType want) -> Value {
    if (cast<RankedTensorType>(padded.getType()) == want)
      return padded;
    SmallVector<OpFoldResult> offsets(3, rw.getIndexAttr(0)), sizes,
        strides(3, rw.getIndexAttr(1));
    for (int64_t s : want.getShape())
      sizes.push_back(rw.getIndexAttr(s));
    return tensor::ExtractSliceOp::create(rw, loc, want, padded, offsets, sizes,
                                          strides);
  };
  rw.replaceOp(op, ValueRange{unpad(forall.getResult(0), accType),
                              unpad(forall.getResult(1), maxType),
                              unpad(forall.getResult(2), maxType)});
  return success();
}

struct HktLowerOnlineAttentionPass
    : public mlir::hkt::impl::HktLowerOnlineAttentionPassBase<
          HktLowerOnlineAttentionPass> {
  using HktLowerOnlineAttentionPassBase::HktLowerOnlineAttentionPassBase;
  void runOnOperation() override {
    if (tileQ < 1 || tileK < 1) {
      getOperation()->emitError("tile-q and tile-k must be >= 1");
      return signalPassFailure();
    }
    SmallVector<OnlineAttentionOp> ops;
    getOperation()->walk([&](OnlineAttentionOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (OnlineAttentionOp op : ops)
      if (failed(Lowering(op, rewriter, tileQ, tileK).run()))
        return signalPassFailure();
  }
};
} // namespace
