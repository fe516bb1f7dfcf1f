//===- HKTOps.cpp - hkt dialect operations --------------------------------===//
//
// Verifiers (every shape and attribute rule of shared/SPEC.md) and the
// decomposition of hkt.attention into the step ops.
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "llvm/Support/MathExtras.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::hkt;

//===----------------------------------------------------------------------===//
// Shape checking helpers
//===----------------------------------------------------------------------===//

namespace {
/// A dimension is either static or ShapedType::kDynamic; dynamic dimensions
/// match anything (they are checked at run time by the runtime's manifest).
bool dimsMatch(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

int64_t ceilDivDim(int64_t a, int64_t s) {
  return ShapedType::isDynamic(a) ? ShapedType::kDynamic : (a + s - 1) / s;
}

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << "?";
        else
          os << d;
      },
      ", ");
  os << "]";
  return s;
}

/// Emits "<name> must have shape <layout> = [..], got [..]" unless `value`'s
/// shape matches `expected` (dynamic dimensions match anything).
LogicalResult expectShape(Operation *op, StringRef name, Value value,
                          ArrayRef<int64_t> expected, StringRef layout) {
  auto type = cast<RankedTensorType>(value.getType());
  bool ok = type.getRank() == static_cast<int64_t>(expected.size());
  for (auto [got, want] : llvm::zip(type.getShape(), expected))
    ok = ok && dimsMatch(got, want);
  if (ok)
    return success();
  return op->emitOpError() << name << " must have shape " << layout << " = "
                           << shapeStr(expected) << ", got "
                           << shapeStr(type.getShape());
}

LogicalResult expectRank(Operation *op, StringRef name, Value value,
                         int64_t rank, StringRef layout) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() == rank)
    return success();
  return op->emitOpError() << name << " must be " << layout << " (rank "
                           << rank << "), got rank " << type.getRank();
}

/// All float operands of an hkt op share one element type.
LogicalResult expectSameElementType(Operation *op, ValueRange values) {
  Type first;
  for (Value v : values) {
    Type elt = cast<RankedTensorType>(v.getType()).getElementType();
    if (!first)
      first = elt;
    else if (elt != first)
      return op->emitOpError()
             << "float operands must share one element type, got " << first
             << " and " << elt;
  }
  return success();
}

/// Checks that `heads` divides the model width (when static).
LogicalResult expectHeadsDivide(Operation *op, int64_t dim, int64_t heads) {
  if (ShapedType::isDynamic(dim) || ShapedType::isDynamic(heads) ||
      dim % heads == 0)
    return success();
  return op->emitOpError() << "model width D = " << dim
                           << " is not divisible by the number of heads H = "
                           << heads;
}

int64_t dimOf(Value v, unsigned i) {
  return cast<RankedTensorType>(v.getType()).getDimSize(i);
}

// The limits of docs/limits.md (the same numbers as compiler/frontend/LayerConfig.h):
// the block of the coarsest level, stride^(levels-1), and every stride or
// upsampling factor at most 2^10; at most 16 levels; kernels at most 1024.
constexpr int64_t kMaxFactor = int64_t(1) << 10;
constexpr int64_t kMaxLevels = 16;
constexpr int64_t kMaxKernel = 1024;

LogicalResult expectAtMost(Operation *op, StringRef name, int64_t value,
                           int64_t max) {
  if (value <= max)
    return success();
  return op->emitOpError() << name << " = " << value << " exceeds " << max
                           << " (see docs/limits.md)";
}

/// stride^(levels-1) <= kMaxFactor, computed without overflow.
LogicalResult expectCoarsestBlock(Operation *op, int64_t stride,
                                  int64_t levels) {
  int64_t product = 1;
  for (int64_t l = 1; l < levels; ++l)
    if (llvm::MulOverflow(product, stride, product) || product > kMaxFactor)
      return op->emitOpError()
             << "stride^(levels-1) = " << stride << "^" << (levels - 1)
             << " exceeds " << kMaxFactor << " (see docs/limits.md)";
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// DownsampleOp
//===----------------------------------------------------------------------===//

LogicalResult DownsampleOp::verify() {
  Operation *op = getOperation();
  if (failed(expectSameElementType(
          op, {getInput(), getWeight(), getBias(), getInit()})) ||
      failed(expectRank(op, "input", getInput(), 3, "B x T x D")) ||
      failed(expectRank(op, "weight", getWeight(), 2, "D x k")))
    return failure();
  int64_t b = dimOf(getInput(), 0), t = dimOf(getInput(), 1),
          d = dimOf(getInput(), 2), k = dimOf(getWeight(), 1);
  int64_t s = getStride();
  if (failed(expectAtMost(op, "stride", s, kMaxFactor)) ||
      (!ShapedType::isDynamic(k) &&
       failed(expectAtMost(op, "kernel size", k, kMaxKernel))))
    return failure();
  if (failed(expectShape(op, "weight", getWeight(), {d, k}, "D x k")) ||
      failed(expectShape(op, "bias", getBias(), {d}, "D")) ||
      failed(expectShape(op, "init", getInit(), {b, ceilDivDim(t, s), d},
                         "B x ceil(T / stride) x D")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// LevelScoresOp
//===----------------------------------------------------------------------===//

LogicalResult LevelScoresOp::verify() {
  Operation *op = getOperation();
  if (failed(expectSameElementType(op, {getQuery(), getKey(), getInit()})) ||
      failed(expectRank(op, "query", getQuery(), 3, "B x Tq x D")) ||
      failed(expectRank(op, "init", getInit(), 4, "B x H x Tq x Tk")))
    return failure();
  int64_t b = dimOf(getQuery(), 0), tq = dimOf(getQuery(), 1),
          d = dimOf(getQuery(), 2), h = dimOf(getInit(), 1);
  int64_t tk = dimOf(getKey(), 1);
  if (failed(expectShape(op, "key", getKey(), {b, tk, d}, "B x Tk x D")) ||
      failed(expectShape(op, "init", getInit(), {b, h, tq, tk},
                         "B x H x Tq x Tk")))
    return failure();
  return expectHeadsDivide(op, d, h);
}

//===----------------------------------------------------------------------===//
// UpsampleOp
//===----------------------------------------------------------------------===//

LogicalResult UpsampleOp::verify() {
  Operation *op = getOperation();
  if (failed(expectSameElementType(op, {getInput(), getInit()})) ||
      failed(expectRank(op, "input", getInput(), 4, "B x H x Tq' x Tk'")) ||
      failed(expectRank(op, "init", getInit(), 4, "B x H x Tq x Tk")))
    return failure();
  int64_t f = getFactor();
  if (failed(expectAtMost(op, "factor", f, kMaxFactor)))
    return failure();
  auto in = cast<RankedTensorType>(getInput().getType()).getShape();
  auto out = cast<RankedTensorType>(getInit().getType()).getShape();
  if (failed(expectShape(op, "init", getInit(), {in[0], in[1], out[2], out[3]},
                         "B x H x Tq x Tk")))
    return failure();
  for (unsigned i : {2u, 3u}) {
    if (!dimsMatch(ceilDivDim(out[i], f), in[i]))
      return emitOpError() << "input dimension " << i << " must be ceil("
                           << out[i] << " / " << f << ") = "
                           << ceilDivDim(out[i], f) << ", got " << in[i];
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ConvexFuseOp
//===----------------------------------------------------------------------===//

LogicalResult ConvexFuseOp::verify() {
  Operation *op = getOperation();
  if (getScores().empty())
    return emitOpError("needs at least one score operand");
  SmallVector<Value> all(getScores());
  all.push_back(getTheta());
  all.push_back(getInit());
  if (failed(expectSameElementType(op, all)) ||
      failed(expectRank(op, "init", getInit(), 4, "B x H x Tq x Tk")))
    return failure();
  auto shape = cast<RankedTensorType>(getInit().getType()).getShape();
  for (auto [i, s] : llvm::enumerate(getScores())) {
    std::string name = "score operand #" + std::to_string(i);
    if (failed(expectShape(op, name, s, shape, "B x H x Tq x Tk")))
      return failure();
  }
  int64_t levels = getScores().size();
  return expectShape(op, "theta", getTheta(), {shape[1], levels},
                     "H x (number of score operands)");
}

//===----------------------------------------------------------------------===//
// MaskOp
//===----------------------------------------------------------------------===//

LogicalResult MaskOp::verify() {
  Operation *op = getOperation();
  if (failed(expectSameElementType(op, {getInput(), getInit()})) ||
      failed(expectRank(op, "input", getInput(), 4, "B x H x Tq x Tk")))
    return failure();
  auto shape = cast<RankedTensorType>(getInput().getType()).getShape();
  if (failed(expectShape(op, "init", getInit(), shape, "B x H x Tq x Tk")))
    return failure();
  if (getCausal() && !dimsMatch(shape[2], shape[3]))
    return emitOpError() << "causal masking needs square scores, got Tq = "
                         << shape[2] << " and Tk = " << shape[3];
  if (getLengths() &&
      failed(expectShape(op, "lengths", getLengths(), {shape[0]}, "B")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// AttendOp
//===----------------------------------------------------------------------===//

LogicalResult AttendOp::verify() {
  Operation *op = getOperation();
  if (failed(expectSameElementType(op, {getProbs(), getValue(), getInit()})) ||
      failed(expectRank(op, "probs", getProbs(), 4, "B x H x Tq x Tk")) ||
      failed(expectRank(op, "value", getValue(), 3, "B x Tk x D")))
    return failure();
  auto p = cast<RankedTensorType>(getProbs().getType()).getShape();
  int64_t d = dimOf(getValue(), 2);
  if (failed(expectShape(op, "value", getValue(), {p[0], p[3], d},
                         "B x Tk x D")) ||
      failed(expectShape(op, "init", getInit(), {p[0], p[2], d},
                         "B x Tq x D")))
    return failure();
  return expectHeadsDivide(op, d, p[1]);
}

//===----------------------------------------------------------------------===//
// HybridOp
//===----------------------------------------------------------------------===//

LogicalResult HybridOp::verify() {
  Operation *op = getOperation();
  if (failed(expectSameElementType(
          op, {getAttn(), getValue(), getConvU(), getGamma(), getInit()})) ||
      failed(expectRank(op, "attn", getAttn(), 3, "B x T x D")) ||
      failed(expectRank(op, "conv_u", getConvU(), 2, "D x kc")) ||
      failed(expectRank(op, "gamma", getGamma(), 1, "H")))
    return failure();
  auto shape = cast<RankedTensorType>(getAttn().getType()).getShape();
  if (failed(expectShape(op, "value", getValue(), shape, "B x T x D")) ||
      failed(expectShape(op, "init", getInit(), shape, "B x T x D")) ||
      failed(expectShape(op, "conv_u", getConvU(),
                         {shape[2], dimOf(getConvU(), 1)}, "D x kc")))
    return failure();
  return expectHeadsDivide(op, shape[2], dimOf(getGamma(), 0));
}

//===----------------------------------------------------------------------===//
// OnlineAttentionOp
//===----------------------------------------------------------------------===//

namespace {
/// The operands every multi-level attention op shares: one query and one key
/// per level factor (factor 0 is 1), `value` B x Tk x D, query_l
/// B x ceil(Tq / f_l) x D, key_l B x ceil(Tk / f_l) x D.
LogicalResult verifyLevels(Operation *op, ArrayRef<int64_t> factors,
                           ValueRange queries, ValueRange keys, Value value,
                           int64_t tq) {
  size_t levels = factors.size();
  if (levels == 0 || queries.size() != levels || keys.size() != levels)
    return op->emitOpError()
           << "needs one query and one key per level factor, got "
           << queries.size() << " queries, " << keys.size() << " keys and "
           << levels << " factors";
  if (factors[0] != 1)
    return op->emitOpError() << "factor of level 0 must be 1, got "
                             << factors[0];
  if (llvm::any_of(factors, [](int64_t f) { return f < 1; }))
    return op->emitOpError("factors must be >= 1");
  for (int64_t f : factors)
    if (failed(expectAtMost(op, "factor", f, kMaxFactor)))
      return failure();
  if (failed(expectRank(op, "value", value, 3, "B x Tk x D")))
    return failure();
  int64_t b = dimOf(value, 0), tk = dimOf(value, 1), d = dimOf(value, 2);
  for (size_t l = 0; l < levels; ++l) {
    std::string q = "query #" + std::to_string(l),
                k = "key #" + std::to_string(l);
    if (failed(expectShape(op, q, queries[l],
                           {b, ceilDivDim(tq, factors[l]), d},
                           "B x ceil(Tq / factor) x D")) ||
        failed(expectShape(op, k, keys[l], {b, ceilDivDim(tk, factors[l]), d},
                           "B x ceil(Tk / factor) x D")))
      return failure();
  }
  return success();
}

/// Offsets (both or neither), the causal diagonal and the key lengths.
LogicalResult verifyMasks(Operation *op, bool causal, Value queryOffset,
                          Value keyOffset, Value lengths, int64_t b,
                          int64_t tq, int64_t tk) {
  if (static_cast<bool>(queryOffset) != static_cast<bool>(keyOffset))
    return op->emitOpError("needs both offsets (query and key) or neither");
  // Without offsets both sequences start at 0 and the diagonal is i = j; a
  // tile (with offsets) may have any shape.
  if (causal && !queryOffset && !dimsMatch(tq, tk))
    return op->emitOpError() << "causal attention needs Tq = Tk, got " << tq
                             << " and " << tk;
  if (lengths && failed(expectShape(op, "lengths", lengths, {b}, "B")))
    return failure();
  return success();
}
} // namespace

LogicalResult OnlineAttentionOp::verify() {
  Operation *op = getOperation();
  SmallVector<Value> floats(getQueries());
  llvm::append_range(floats, getKeys());
  floats.append({getValue(), getAcc(), getMax(), getSum()});
  if (failed(expectSameElementType(op, floats)) ||
      failed(expectRank(op, "acc", getAcc(), 3, "B x Tq x D")) ||
      failed(expectRank(op, "max", getMax(), 3, "B x H x Tq")))
    return failure();
  if (failed(expectRank(op, "value", getValue(), 3, "B x Tk x D")))
    return failure();
  int64_t tq = dimOf(getAcc(), 1), h = dimOf(getMax(), 1);
  int64_t b = dimOf(getValue(), 0), tk = dimOf(getValue(), 1),
          d = dimOf(getValue(), 2);
  if (failed(expectShape(op, "acc", getAcc(), {b, tq, d}, "B x Tq x D")) ||
      failed(expectShape(op, "max", getMax(), {b, h, tq}, "B x H x Tq")) ||
      failed(expectShape(op, "sum", getSum(), {b, h, tq}, "B x H x Tq")) ||
      failed(expectHeadsDivide(op, d, h)) ||
      failed(verifyLevels(op, getFactors(), getQueries(), getKeys(),
                          getValue(), tq)))
    return failure();
  return verifyMasks(op, getCausal(), getQueryOffset(), getKeyOffset(),
                     getLengths(), b, tq, tk);
}

//===----------------------------------------------------------------------===//
// FusedAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult FusedAttentionOp::verify() {
  Operation *op = getOperation();
  SmallVector<Value> floats(getQueries());
  llvm::append_range(floats, getKeys());
  floats.append({getValue(), getWeights(), getInit(), getLseInit()});
  if (failed(expectSameElementType(op, floats)) ||
      failed(expectRank(op, "init", getInit(), 3, "B x Tq x D")) ||
      failed(expectRank(op, "lse", getLseInit(), 3, "B x H x Tq")))
    return failure();
  int64_t tq = dimOf(getInit(), 1), h = dimOf(getLseInit(), 1);
  if (failed(verifyLevels(op, getFactors(), getQueries(), getKeys(),
                          getValue(), tq)))
    return failure();
  int64_t b = dimOf(getValue(), 0), tk = dimOf(getValue(), 1),
          d = dimOf(getValue(), 2);
  int64_t levels = getFactors().size();
  if (failed(expectShape(op, "init", getInit(), {b, tq, d}, "B x Tq x D")) ||
      failed(expectShape(op, "lse", getLseInit(), {b, h, tq}, "B x H x Tq")) ||
      failed(expectShape(op, "weights", getWeights(), {h, levels}, "H x L")) ||
      failed(expectHeadsDivide(op, d, h)))
    return failure();
  return verifyMasks(op, getCausal(), Value(), Value(), getLengths(), b, tq,
                     tk);
}

//===----------------------------------------------------------------------===//
// OnlineAttentionBackwardOp
//===----------------------------------------------------------------------===//

LogicalResult OnlineAttentionBackwardOp::verify() {
  Operation *op = getOperation();
  SmallVector<Value> floats(getQueries());
  llvm::append_range(floats, getKeys());
  floats.append({getValue(), getDout(), getLse(), getDelta()});
  llvm::append_range(floats, getDqueryInit());
  llvm::append_range(floats, getDkeyInit());
  floats.push_back(getDvalueInit());
  if (failed(expectSameElementType(op, floats)) ||
      failed(expectRank(op, "dout", getDout(), 3, "B x Tq x D")) ||
      failed(expectRank(op, "lse", getLse(), 3, "B x H x Tq")))
    return failure();
  int64_t tq = dimOf(getDout(), 1), h = dimOf(getLse(), 1);
  if (failed(verifyLevels(op, getFactors(), getQueries(), getKeys(),
                          getValue(), tq)))
    return failure();
  int64_t b = dimOf(getValue(), 0), tk = dimOf(getValue(), 1),
          d = dimOf(getValue(), 2);
  if (failed(expectShape(op, "dout", getDout(), {b, tq, d}, "B x Tq x D")) ||
      failed(expectShape(op, "lse", getLse(), {b, h, tq}, "B x H x Tq")) ||
      failed(expectShape(op, "delta", getDelta(), {b, h, tq}, "B x H x Tq")) ||
      failed(expectHeadsDivide(op, d, h)))
    return failure();
  size_t levels = getFactors().size();
  if (getDqueryInit().size() != levels || getDkeyInit().size() != levels)
    return emitOpError() << "needs one query and one key gradient per level, "
                            "got "
                         << getDqueryInit().size() << " and "
                         << getDkeyInit().size() << " for " << levels
                         << " levels";
  for (size_t l = 0; l < levels; ++l) {
    if (getDqueryInit()[l].getType() != getQueries()[l].getType())
      return emitOpError() << "query gradient #" << l << " must have the type "
                           << getQueries()[l].getType() << " of its query, got "
                           << getDqueryInit()[l].getType();
    if (getDkeyInit()[l].getType() != getKeys()[l].getType())
      return emitOpError() << "key gradient #" << l << " must have the type "
                           << getKeys()[l].getType() << " of its key, got "
                           << getDkeyInit()[l].getType();
  }
  if (getDvalueInit().getType() != getValue().getType())
    return emitOpError() << "value gradient must have the type "
                         << getValue().getType() << " of the value, got "
                         << getDvalueInit().getType();
  return verifyMasks(op, getCausal(), getQueryOffset(), getKeyOffset(),
                     getLengths(), b, tq, tk);
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  Operation *op = getOperation();
  SmallVector<Value> floats = {getX(), getWq(), getWk(), getWv(),
                               getWo(), getTheta(), getInit()};
  for (Value v : {getDownW(), getDownB(), getConvU(), getGamma()})
    if (v)
      floats.push_back(v);
  if (failed(expectSameElementType(op, floats)) ||
      failed(expectRank(op, "x", getX(), 3, "B x T x D")))
    return failure();
  int64_t b = dimOf(getX(), 0), t = dimOf(getX(), 1), d = dimOf(getX(), 2);
  int64_t h = getHeads(), l = getLevels();
  // Only the batch and the sequence may be dynamic: the heads split D, and
  // the weights' shapes are the layer's.
  if (ShapedType::isDynamic(d))
    return emitOpError("the model width D of x must be static (only B and "
                       "T may be dynamic), got ")
           << getX().getType();
  const StringRef weightNames[] = {
      "wq", "wk", "wv", "wo", "theta", "down_w", "down_b", "conv_u", "gamma"};
  const Value weights[] = {getWq(),    getWk(),    getWv(),
                           getWo(),    getTheta(), getDownW(),
                           getDownB(), getConvU(), getGamma()};
  for (auto [name, v] : llvm::zip(weightNames, weights))
    if (v && !cast<RankedTensorType>(v.getType()).hasStaticShape())
      return emitOpError() << "weight " << name
                           << " must have a static shape (only B and T of "
                              "x may be dynamic), got "
                           << v.getType();
  if (failed(expectAtMost(op, "levels", l, kMaxLevels)) ||
      failed(expectAtMost(op, "stride", getStride(), kMaxFactor)) ||
      failed(expectAtMost(op, "kernel", getKernel(), kMaxKernel)) ||
      failed(expectAtMost(op, "conv_kernel", getConvKernel(), kMaxKernel)) ||
      failed(expectCoarsestBlock(op, getStride(), l)))
    return failure();
  if (failed(expectHeadsDivide(op, d, h)) ||
      failed(expectShape(op, "wq", getWq(), {l, d, d}, "L x D x D")) ||
      failed(expectShape(op, "wk", getWk(), {l, d, d}, "L x D x D")) ||
      failed(expectShape(op, "wv", getWv(), {d, d}, "D x D")) ||
      failed(expectShape(op, "wo", getWo(), {d, d}, "D x D")) ||
      failed(expectShape(op, "theta", getTheta(), {h, l}, "H x L")) ||
      failed(expectShape(op, "init", getInit(), {b, t, d}, "B x T x D")))
    return failure();

  // Downsampling weights exist exactly when there is more than one level.
  if (l > 1 && (!getDownW() || !getDownB()))
    return emitOpError() << "levels = " << l
                         << " needs downsample(down_w, down_b) operands";
  if (l == 1 && (getDownW() || getDownB()))
    return emitOpError("levels = 1 takes no downsample operands");
  if (getDownW() &&
      (failed(expectShape(op, "down_w", getDownW(), {l - 1, d, static_cast<int64_t>(getKernel())},
                          "(L-1) x D x kernel")) ||
       failed(expectShape(op, "down_b", getDownB(), {l - 1, d},
                          "(L-1) x D"))))
    return failure();

  // The convolution branch exists exactly when the head is hybrid.
  if (getHybrid() && (!getConvU() || !getGamma()))
    return emitOpError("hybrid = true needs conv(conv_u, gamma) operands");
  if (!getHybrid() && (getConvU() || getGamma()))
    return emitOpError("conv(conv_u, gamma) operands need hybrid = true");
  if (getConvU() &&
      (failed(expectShape(op, "conv_u", getConvU(), {d, static_cast<int64_t>(getConvKernel())},
                          "D x conv_kernel")) ||
       failed(expectShape(op, "gamma", getGamma(), {h}, "H"))))
    return failure();

  if (getLengths() &&
      failed(expectShape(op, "lengths", getLengths(), {b}, "B")))
    return failure();
  return success();
}

namespace {
/// Small builder helpers for the decomposition. B and T may be dynamic
/// (sizes are OpFoldResults: an attribute when static, else an index value).
struct LayerBuilder {
  OpBuilder &b;
  Location loc;
  Type elt;

  Value empty(ArrayRef<OpFoldResult> shape) {
    return tensor::EmptyOp::create(b, loc, shape, elt);
  }

  Value zeros(Value dest) {
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elt));
    return linalg::FillOp::create(b, loc, zero, dest).getResult(0);
  }

  /// ceil(size / s), folded when `size` is static (SPEC's level lengths).
  OpFoldResult ceilDiv(OpFoldResult size, int64_t s) {
    if (std::optional<int64_t> c = getConstantIntValue(size))
      return b.getIndexAttr((*c + s - 1) / s);
    Value divisor = arith::ConstantIndexOp::create(b, loc, s);
    return arith::CeilDivUIOp::create(b, loc, cast<Value>(size), divisor)
        .getResult();
  }

  /// x * y, folded when both are static.
  OpFoldResult mul(OpFoldResult x, OpFoldResult y) {
    std::optional<int64_t> cx = getConstantIntValue(x),
                           cy = getConstantIntValue(y);
    if (cx && cy)
      return b.getIndexAttr(*cx * *cy);
    return arith::MulIOp::create(b, loc,
                                 getValueOrCreateConstantIndexOp(b, loc, x),
                                 getValueOrCreateConstantIndexOp(b, loc, y))
        .getResult();
  }

  /// The slice `w[index]` of a stacked weight, rank-reduced by one.
  Value slice(Value stacked, int64_t index) {
    auto type = cast<RankedTensorType>(stacked.getType());
    int64_t rank = type.getRank();
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    offsets[0] = b.getIndexAttr(index);
    SmallVector<OpFoldResult> sizes{b.getIndexAttr(1)};
    for (int64_t i = 1; i < rank; ++i)
      sizes.push_back(b.getIndexAttr(type.getDimSize(i)));
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    auto resultType =
        RankedTensorType::get(type.getShape().drop_front(), type.getElementType());
    return tensor::ExtractSliceOp::create(b, loc, resultType, stacked, offsets,
                                          sizes, strides);
  }

  /// `act W` for `act`: B x T x Din and `W`: Din x Dout, as one linalg.matmul
  /// on the (B*T) x Din view, accumulating into a zeroed `dest` (B x T x Dout).
  Value project(Value act, Value weight, Value dest) {
    SmallVector<ReassociationIndices> collapse = {{0, 1}, {2}};
    Value a = tensor::CollapseShapeOp::create(b, loc, act, collapse);
    // An empty destination carries no data: accumulate in a 2-D tensor of
    // its own, so the matmul's buffer is not a reshaped view (codegen keeps
    // accumulators in registers only on plain buffers).
    SmallVector<OpFoldResult> destSizes = tensor::getMixedSizes(b, loc, dest);
    Value acc2d;
    if (dest.getDefiningOp<tensor::EmptyOp>()) {
      acc2d = empty({mul(destSizes[0], destSizes[1]), destSizes[2]});
    } else {
      acc2d = tensor::CollapseShapeOp::create(b, loc, dest, collapse);
    }
    Value acc = zeros(acc2d);
    Value mm = linalg::MatmulOp::create(b, loc, ValueRange{a, weight},
                                        ValueRange{acc})
                   .getResult(0);
    return tensor::ExpandShapeOp::create(b, loc, dest.getType(), mm, collapse,
                                         destSizes);
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// Model ops
//===----------------------------------------------------------------------===//

LogicalResult EmbedOp::verify() {
  Operation *op = getOperation();
  if (failed(expectSameElementType(op, {getTable(), getPos(), getInit()})) ||
      failed(expectRank(op, "tokens", getTokens(), 2, "B x T")) ||
      failed(expectRank(op, "table", getTable(), 2, "V x D")) ||
      failed(expectRank(op, "pos", getPos(), 2, "P x D")))
    return failure();
  int64_t b = dimOf(getTokens(), 0), t = dimOf(getTokens(), 1),
          d = dimOf(getTable(), 1), p = dimOf(getPos(), 0);
  if (failed(expectShape(op, "pos", getPos(), {p, d}, "P x D")) ||
      failed(expectShape(op, "init", getInit(), {b, t, d}, "B x T x D")))
    return failure();
  if (!ShapedType::isDynamic(t) && !ShapedType::isDynamic(p) && t > p)
    return emitOpError() << "sequence length T = " << t
                         << " exceeds the " << p << " positions of pos";
  return success();
}

LogicalResult LayerNormOp::verify() {
  Operation *op = getOperation();
  if (failed(expectSameElementType(
          op, {getInput(), getWeight(), getBias(), getInit()})))
    return failure();
  auto type = cast<RankedTensorType>(getInput().getType());
  if (type.getRank() < 1)
    return emitOpError("input must have rank >= 1 (... x D)");
  int64_t d = type.getShape().back();
  if (failed(expectShape(op, "weight", getWeight(), {d}, "D")) ||
      failed(expectShape(op, "bias", getBias(), {d}, "D")) ||
      failed(expectShape(op, "init", getInit(), type.getShape(), "... x D")))
    return failure();
  if (!(getEpsilon().convertToDouble() > 0.0))
    return emitOpError() << "epsilon must be positive, got "
                         << getEpsilon().convertToDouble();
  return success();
}

LogicalResult GeluOp::verify() {
  Operation *op = getOperation();
  if (failed(expectSameElementType(op, {getInput(), getInit()})))
    return failure();
  return expectShape(op, "init", getInit(),
                     cast<RankedTensorType>(getInput().getType()).getShape(),
                     "the input's shape");
}

LogicalResult MeanPoolOp::verify() {
  Operation *op = getOperation();
  if (failed(expectSameElementType(op, {getInput(), getInit()})) ||
      failed(expectRank(op, "input", getInput(), 3, "B x T x D")))
    return failure();
  int64_t b = dimOf(getInput(), 0), d = dimOf(getInput(), 2);
  if (failed(expectShape(op, "lengths", getLengths(), {b}, "B")) ||
      failed(expectShape(op, "init", getInit(), {b, d}, "B x D")))
    return failure();
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  Operation *op = getOperation();
  if (failed(expectSameElementType(op, {getLogits(), getInit()})) ||
      failed(expectRank(op, "logits", getLogits(), 2, "B x C")))
    return failure();
  if (failed(expectShape(op, "labels", getLabels(), {dimOf(getLogits(), 0)},
                         "B")) ||
      failed(expectShape(op, "init", getInit(), {}, "a scalar")))
    return failure();
  return success();
}

LogicalResult TokenLengthsOp::verify() {
  Operation *op = getOperation();
  if (failed(expectRank(op, "tokens", getTokens(), 2, "B x T")) ||
      failed(expectShape(op, "init", getInit(), {dimOf(getTokens(), 0)}, "B")))
    return failure();
  return success();
}

FailureOr<SmallVector<Value>> AttentionOp::decomposeOperation(OpBuilder &b) {
  auto xType = cast<RankedTensorType>(getX().getType());
  LayerBuilder lb{b, getLoc(), xType.getElementType()};
  // B and T may be dynamic (the verifier keeps D static); the level lengths
  // T_l = ceil(T_{l-1} / s) are then computed at run time.
  SmallVector<OpFoldResult> xSizes = tensor::getMixedSizes(b, getLoc(), getX());
  OpFoldResult batch = xSizes[0], t = xSizes[1], d = xSizes[2];
  OpFoldResult heads = b.getIndexAttr(getHeads());
  int64_t levels = getLevels(), stride = getStride();

  // V = X Wv, level 0 only (SPEC 2).
  Value value = lb.project(getX(), getWv(), lb.empty({batch, t, d}));

  // Per level: downsample (SPEC 1), project (2), score (3), upsample (4).
  SmallVector<Value> scores;
  Value xl = getX();
  OpFoldResult tl = t;
  int64_t factor = 1;
  for (int64_t l = 0; l < levels; ++l) {
    if (l > 0) {
      tl = lb.ceilDiv(tl, stride);
      factor *= stride;
      Value init = lb.empty({batch, tl, d});
      xl = DownsampleOp::create(b, getLoc(), init.getType(), xl,
                                lb.slice(getDownW(), l - 1),
                                lb.slice(getDownB(), l - 1), init, stride);
    }
    Value q = lb.project(xl, lb.slice(getWq(), l), lb.empty({batch, tl, d}));
    Value k = lb.project(xl, lb.slice(getWk(), l), lb.empty({batch, tl, d}));
    Value init = lb.empty({batch, heads, tl, tl});
    Value s = LevelScoresOp::create(b, getLoc(), init.getType(), q, k, init);
    if (l > 0) {
      Value upInit = lb.empty({batch, heads, t, t});
      s = UpsampleOp::create(b, getLoc(), upInit.getType(), s, upInit, factor);
    }
    scores.push_back(s);
  }

  // Convex fusion (SPEC 4), masks (5), softmax and A V (6).
  SmallVector<OpFoldResult> scoreShape = {batch, heads, t, t};
  Value scoreInit = lb.empty(scoreShape);
  Type scoreType = scoreInit.getType();
  Value fused = ConvexFuseOp::create(b, getLoc(), scoreType, scores, getTheta(),
                                     scoreInit);
  Value masked = MaskOp::create(b, getLoc(), scoreType, fused, getLengths(),
                                lb.empty(scoreShape), getCausal());
  Value probs = linalg::SoftmaxOp::create(b, getLoc(), masked.getType(), masked,
                                          lb.empty(scoreShape), /*dimension=*/3)
                    .getResult()[0];
  Value outInit = lb.empty({batch, t, d});
  Type outType = outInit.getType();
  Value out = AttendOp::create(b, getLoc(), outType, probs, value, outInit);

  // Hybrid head (SPEC 7) and output projection (8) into the destination.
  if (getHybrid())
    out = HybridOp::create(b, getLoc(), outType, out, value, getConvU(),
                           getGamma(), lb.empty({batch, t, d}));
  return SmallVector<Value>{lb.project(out, getWo(), getInit())};
}

#define GET_OP_CLASSES
#include "dialect/HKTOps.cpp.inc"
