//===- LowerOnlineAttention.cpp - hkt-lower-online-attention --------------===//
//
// hkt.online_attention -> scf.forall (batch, head, query tile) x scf.for (key
// tile) over small static linalg ops (see Passes.td). Never materialises more
// than a tile-q x tile-k block of scores.
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
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
using utils::IteratorType;
constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;

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
                ArrayRef<IteratorType> iterators,
                function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    return linalg::GenericOp::create(
               rw, loc, out.getType(), ins, ValueRange{out}, maps, iterators,
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 linalg::YieldOp::create(nb, nl, body(nb, nl, args));
               })
        .getResult(0);
  }
  AffineMap map(unsigned dims, ArrayRef<AffineExpr> results) {
    return AffineMap::get(dims, 0, results, ctx);
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

  Value scoresForTile(Value i0, Value j0, Value b, Value col0,
                      ArrayRef<Value> queryTiles);
  Value mask(Value scores, Value i0, Value j0, Value keyLength);

  OnlineAttentionOp op;
  RewriterBase &rw;
  Location loc;
  MLIRContext *ctx;
  int64_t requestedQ, requestedK;
  Type elt;
  int64_t tileQ = 0, tileK = 0, headDim = 0;
  SmallVector<int64_t> factors;
  SmallVector<Value> keys; // padded
};

/// S[i, j] = sum_l qtile_l[i / f_l] . ktile_l[j / f_l]: the level-l block is
/// computed once at coarse resolution and broadcast over f_l x f_l.
Value Lowering::scoresForTile(Value i0, Value j0, Value b, Value col0,
                              ArrayRef<Value> queryTiles) {
  Value zero = constant(0.0);
  Value scores = filled({tileQ, tileK}, zero);
  for (auto [l, f] : llvm::enumerate(factors)) {
    int64_t rowsK = tileK / f;
    Value j0l = arith::DivUIOp::create(rw, loc, j0, index(f));
    // Keys are stored transposed (d x keys): the block is a plain matmul
    // whose key columns are contiguous, so it vectorises along keys.
    Value keyTile = slice(keys[l], {b, col0, j0l}, {1, headDim, rowsK},
                          {headDim, rowsK});
    Value target = f == 1 ? scores : filled({tileQ / f, rowsK}, zero);
    Value block = linalg::MatmulOp::create(rw, loc,
                                           ValueRange{queryTiles[l], keyTile},
                                           ValueRange{target})
                      .getResult(0);
    if (f == 1) {
      scores = block;
      continue;
    }
    // Broadcast: view the scores as (tileQ/f, f, tileK/f, f) blocks.
    SmallVector<ReassociationIndices> split = {{0, 1}, {2, 3}};
    Value blocks = tensor::ExpandShapeOp::create(
        rw, loc, type({tileQ / f, f, rowsK, f}), scores, split);
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
  return linalg::GenericOp::create(
             rw, loc, scores.getType(), ValueRange{}, ValueRange{scores},
             {map(2, {i, j})}, {kPar, kPar},
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value row = arith::AddIOp::create(
                   nb, nl, i0, linalg::IndexOp::create(nb, nl, 0));
               Value col = arith::AddIOp::create(
                   nb, nl, j0, linalg::IndexOp::create(nb, nl, 1));
               Value drop = arith::CmpIOp::create(
                   nb, nl, arith::CmpIPredicate::uge, col, keyLength);
               if (causal)
                 drop = arith::OrIOp::create(
                     nb, nl, drop,
                     arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ugt,
                                           col, row));
               linalg::YieldOp::create(
                   nb, nl,
                   arith::SelectOp::create(nb, nl, drop, negInf, args[0])
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

  rw.setInsertionPoint(op);
  Value zero = constant(0.0);
  Value lowest = arith::ConstantOp::create(
      rw, loc, elt,
      rw.getFloatAttr(elt, APFloat::getLargest(
                               cast<FloatType>(elt).getFloatSemantics(), true)));
  SmallVector<Value> queries;
  for (auto [l, f] : llvm::enumerate(factors)) {
    queries.push_back(padTo(op.getQueries()[l], 1, tqPad / f, zero));
    // B x D x Tk_l: transposed once, read tile by tile.
    Value key = padTo(op.getKeys()[l], 1, tkPad / f, zero);
    Value keyT = tensor::EmptyOp::create(rw, loc, {batch, dim, tkPad / f}, elt);
    keys.push_back(linalg::TransposeOp::create(rw, loc, key, keyT,
                                               ArrayRef<int64_t>{0, 2, 1})
                       .getResult()[0]);
  }
  Value value = padTo(op.getValue(), 1, tkPad, zero);
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
      queryTiles.push_back(slice(queries[l], {b, row0, col0},
                                 {1, tileQ / f, headDim},
                                 {tileQ / f, headDim}));
    }
    Value accTile =
        slice(outs[0], {b, i0, col0}, {1, tileQ, headDim}, {tileQ, headDim});
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

    auto loop = scf::ForOp::create(
        rw, loc, index(0), numTiles, index(1),
        ValueRange{accTile, maxTile, sumTile},
        [&](OpBuilder &, Location, Value kt, ValueRange iter) {
          Value j0 = arith::MulIOp::create(rw, loc, kt, index(tileK));
          Value scores = scoresForTile(i0, j0, b, col0, queryTiles);
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
          Value valueTile = slice(value, {b, j0, col0}, {1, tileK, headDim},
                                  {tileK, headDim});
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
