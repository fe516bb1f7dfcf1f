//===- Bf16Matmul.cpp - hkt-cpu-amx-matmul, hkt-cpu-avx512bf16-matmul ----===//
//
// linalg.matmul on f32 buffers -> bf16 operands, f32 accumulation, for
// hkt-compile --precision bf16 on the CPU. Both passes round the left
// operand to bf16 row by row and the right one into the pair-interleaved
// layout that both instruction sets read ([K/2, 2N]: row r holds B[2r, n]
// and B[2r + 1, n] side by side); operands that a parallel loop only reads
// are rounded once before it (Prerounded). Then:
//  - hkt-cpu-amx-matmul (Intel AMX, tdpbf16ps): 16 x 16 f32 accumulator
//    tiles, 2 x 2 of them at once where the shape allows (4 accumulators +
//    2 + 2 operand tiles: AMX's 8 tile registers), K 32 at a time;
//  - hkt-cpu-avx512bf16-matmul (AVX512-BF16, vdpbf16ps: Zen 4/5, Cooper
//    Lake): a register tile of 8 rows x 2 vectors of 16 f32 accumulators,
//    K two at a time (a row's pair broadcast, 16 column pairs loaded).
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/cpu/BufferAliasing.h"
#include "passes/codegen/cpu/Passes.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>
#include <tuple>

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTCPUAMXMATMULPASS
#define GEN_PASS_DEF_HKTCPUAVX512BF16MATMULPASS
#include "passes/codegen/cpu/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {

/// AMX's shapes: a 16 x 16 f32 accumulator, a 16 x 32 bf16 left tile, a
/// 16 x (16 pairs) right tile; vectors of 16 f32 for the conversions.
constexpr int64_t kTile = 16, kStepK = 32, kLanes = 16;
/// K steps unrolled between a load and a store of the accumulators (the
/// tiles cannot be loop-carried through MLIR 22's cf-to-llvm, which has no
/// conversion for !amx.tile block arguments).
constexpr int64_t kStepsPerChunk = 16;
/// AVX512-BF16's register tile: accumulator rows x vectors of 16 columns
/// (16 accumulators, 2 right-operand vectors and a broadcast of 32 zmm).
constexpr int64_t kDotRows = 8, kDotVectors = 2;

/// The instructions a pass multiplies with.
enum class Bf16Kernel { Amx, Avx512Dot };

/// A 2-D f32 buffer with contiguous rows and a static column count (`rows`
/// may be ShapedType::kDynamic).
bool isRowMajorF32(Value v, int64_t &rows, int64_t &cols) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || type.getRank() != 2 || type.isDynamicDim(1) ||
      !type.getElementType().isF32())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides[1] != 1)
    return false;
  rows = type.getDimSize(0);
  cols = type.getDimSize(1);
  return true;
}

class Rewriter {
public:
  Rewriter(OpBuilder &b, Location loc, Bf16Kernel kernel = Bf16Kernel::Amx)
      : b(b), loc(loc), kernel(kernel) {}

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, int64_t y) {
    return y ? arith::AddIOp::create(b, loc, x, index(y)).getResult() : x;
  }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, index(y));
  }

  /// A vector of bf16 zeros.
  Value zeros() {
    auto type = VectorType::get({kLanes}, b.getBF16Type());
    return arith::ConstantOp::create(
        b, loc, type,
        DenseElementsAttr::get(type, b.getZeroAttr(b.getBF16Type())));
  }

  /// Whether C holds zeros before the products (a linalg.fill of +0.0 just
  /// before a matmul in a parallel loop, which the rewrite then drops): the
  /// accumulators start at zero instead of being loaded. (Never for a whole
  /// matmul, so lastRows always copies C in.)
  bool fromZero = false;

  /// for (iv = 0; iv < n; iv += step) body(iv)
  void loop(int64_t n, int64_t step, function_ref<void(Value)> body) {
    loop(0, n, step, body);
  }
  /// for (iv = from; iv < n; iv += step) body(iv)
  void loop(int64_t from, int64_t n, int64_t step,
            function_ref<void(Value)> body) {
    auto forOp = scf::ForOp::create(b, loc, index(from), index(n), index(step));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forOp.getBody());
    body(forOp.getInductionVar());
  }

  /// dst[r, 0:K] = bf16(src[rowOffset + r, 0:K]) for r < rows.
  /// (or dst[dstOffset + r, 0:K] given dstOffset).
  void roundRows(Value src, Value rowOffset, int64_t rows, int64_t k, Value dst,
                 Value dstOffset = {}) {
    auto f32 = VectorType::get({kLanes}, b.getF32Type());
    auto bf16 = VectorType::get({kLanes}, b.getBF16Type());
    loop(rows, 1, [&](Value r) {
      Value row = arith::AddIOp::create(b, loc, rowOffset, r);
      Value dstRow =
          dstOffset ? arith::AddIOp::create(b, loc, dstOffset, r).getResult()
                    : r;
      loop(k, kLanes, [&](Value col) {
        Value v = vector::LoadOp::create(b, loc, f32, src, ValueRange{row, col});
        Value t = arith::TruncFOp::create(b, loc, bf16, v);
        vector::StoreOp::create(b, loc, t, dst, ValueRange{dstRow, col});
      });
    });
  }

  /// dst[r, 2n + p] = bf16(src[2r + p, n]): AMX's right-operand layout.
  void roundPairs(Value src, int64_t k, int64_t n, Value dst) {
    roundPairs(src, index(0), k / 2, n, dst);
  }
  /// The same for the pair rows [first, first + pairRows) of dst.
  void roundPairs(Value src, Value first, int64_t pairRows, int64_t n,
                  Value dst) {
    auto f32 = VectorType::get({kLanes}, b.getF32Type());
    auto bf16 = VectorType::get({kLanes}, b.getBF16Type());
    loop(pairRows, 1, [&](Value local) {
      Value r = arith::AddIOp::create(b, loc, first, local);
      Value even = mul(r, 2), odd = add(even, 1);
      loop(n, kLanes, [&](Value col) {
        Value lo = arith::TruncFOp::create(
            b, loc, bf16,
            vector::LoadOp::create(b, loc, f32, src, ValueRange{even, col}));
        Value hi = arith::TruncFOp::create(
            b, loc, bf16,
            vector::LoadOp::create(b, loc, f32, src, ValueRange{odd, col}));
        Value pairs = vector::InterleaveOp::create(b, loc, lo, hi);
        vector::StoreOp::create(b, loc, pairs, dst,
                                ValueRange{r, mul(col, 2)});
      });
    });
  }

  /// dst[r, from:to] = 0 for r < rows (K's padding up to a whole step).
  void zeroColumns(Value dst, int64_t rows, int64_t from, int64_t to) {
    if (from == to)
      return;
    Value zero = zeros();
    loop(rows, 1, [&](Value r) {
      for (int64_t col = from; col < to; col += kLanes)
        vector::StoreOp::create(b, loc, zero, dst, ValueRange{r, index(col)});
    });
  }

  /// dst[from:to, 0:cols] = 0 (the pair rows of K's padding).
  void zeroRows(Value dst, int64_t from, int64_t to, int64_t cols) {
    if (from == to)
      return;
    Value zero = zeros();
    for (int64_t row = from; row < to; ++row)
      loop(cols, kLanes, [&](Value col) {
        vector::StoreOp::create(b, loc, zero, dst, ValueRange{index(row), col});
      });
  }

  /// C[first:rows] += A[first:rows] B (fewer rows than `block`, maybe none)
  /// through zero-padded block-row copies of A (bf16) and of C (f32).
  void lastRows(Value a, Value b16, Value c, Value first, Value rows,
                int64_t block, int64_t n, int64_t k, int64_t kp) {
    Value count = arith::SubIOp::create(b, loc, rows, first);
    Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, count,
                                      index(0));
    auto ifOp = scf::IfOp::create(b, loc, any, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    auto f32 = b.getF32Type();
    Value a16 = memref::AllocOp::create(
        b, loc, MemRefType::get({block, kp}, b.getBF16Type()));
    Value c32 =
        memref::AllocOp::create(b, loc, MemRefType::get({block, n}, f32));
    zeroColumns(a16, block, 0, kp);
    auto f32Vector = VectorType::get({kLanes}, f32);
    Value zero = arith::ConstantOp::create(
        b, loc, f32Vector,
        DenseElementsAttr::get(f32Vector, b.getZeroAttr(f32)));
    loop(block, 1, [&](Value i) {
      loop(n, kLanes, [&](Value j) {
        vector::StoreOp::create(b, loc, zero, c32, ValueRange{i, j});
      });
    });
    auto eachRow = [&](function_ref<void(Value, Value)> body) {
      auto forOp = scf::ForOp::create(b, loc, index(0), count, index(1));
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(forOp.getBody());
      Value i = forOp.getInductionVar();
      body(i, arith::AddIOp::create(b, loc, first, i));
    };
    auto bf16Vector = VectorType::get({kLanes}, b.getBF16Type());
    eachRow([&](Value i, Value row) {
      loop(k, kLanes, [&](Value col) {
        Value v =
            vector::LoadOp::create(b, loc, f32Vector, a, ValueRange{row, col});
        vector::StoreOp::create(b, loc,
                                arith::TruncFOp::create(b, loc, bf16Vector, v),
                                a16, ValueRange{i, col});
      });
      loop(n, kLanes, [&](Value col) {
        vector::StoreOp::create(
            b, loc,
            vector::LoadOp::create(b, loc, f32Vector, c, ValueRange{row, col}),
            c32, ValueRange{i, col});
      });
    });
    multiply(a16, b16, c32, index(0), block, n, kp);
    eachRow([&](Value i, Value row) {
      loop(n, kLanes, [&](Value col) {
        vector::StoreOp::create(
            b, loc,
            vector::LoadOp::create(b, loc, f32Vector, c32, ValueRange{i, col}),
            c, ValueRange{row, col});
      });
    });
    memref::DeallocOp::create(b, loc, a16);
    memref::DeallocOp::create(b, loc, c32);
  }

  /// C[cRow + i, j] += A16[i, :] B16 for i < rows (A16 holds those rows,
  /// a multiple of 16; K a multiple of 32).
  void multiply(Value a16, Value b16, Value c, Value cRow, int64_t rows,
                int64_t n, int64_t k) {
    if (kernel == Bf16Kernel::Amx)
      multiplyAmx(a16, b16, c, cRow, rows, n, k);
    else
      multiplyDot(a16, b16, c, cRow, rows, n, k);
  }

  /// multiply on AVX512-BF16: per register tile, the accumulators carried
  /// through a loop over K's pairs, each step one vdpbf16ps per
  /// accumulator (a row's pair A16[i, 2p:2p+2] broadcast as one 32-bit
  /// value, times 16 column pairs of B16's row p).
  void multiplyDot(Value a16, Value b16, Value c, Value cRow, int64_t rows,
                   int64_t n, int64_t k) {
    int64_t tr = std::gcd(rows, kDotRows);
    int64_t tv = n % (kDotVectors * kLanes) == 0 ? kDotVectors : 1;
    auto f32 = VectorType::get({kLanes}, b.getF32Type());
    auto pairs = VectorType::get({2 * kLanes}, b.getBF16Type());
    auto onePair = VectorType::get({2}, b.getBF16Type());
    auto oneWord = VectorType::get({1}, b.getI32Type());
    auto words = VectorType::get({kLanes}, b.getI32Type());
    loop(rows, tr, [&](Value i) {
      loop(n, kLanes * tv, [&](Value j) {
        SmallVector<Value> cRows, cols, init;
        for (int64_t x = 0; x < tr; ++x)
          cRows.push_back(add(arith::AddIOp::create(b, loc, cRow, i), x));
        for (int64_t y = 0; y < tv; ++y)
          cols.push_back(add(j, y * kLanes));
        Value zero;
        if (fromZero)
          zero = arith::ConstantOp::create(
              b, loc, f32, DenseElementsAttr::get(f32, b.getF32FloatAttr(0)));
        for (int64_t x = 0; x < tr; ++x)
          for (int64_t y = 0; y < tv; ++y)
            init.push_back(
                zero ? zero
                     : vector::LoadOp::create(b, loc, f32, c,
                                              ValueRange{cRows[x], cols[y]})
                           .getResult());
        auto forOp =
            scf::ForOp::create(b, loc, index(0), index(k / 2), index(1), init);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(forOp.getBody());
          Value p = forOp.getInductionVar();
          SmallVector<Value> rhs, acc(forOp.getRegionIterArgs());
          for (int64_t y = 0; y < tv; ++y)
            rhs.push_back(vector::LoadOp::create(
                b, loc, pairs, b16, ValueRange{p, mul(cols[y], 2)}));
          Value col = mul(p, 2);
          for (int64_t x = 0; x < tr; ++x) {
            Value pair = vector::LoadOp::create(b, loc, onePair, a16,
                                                ValueRange{add(i, x), col});
            Value word = vector::ExtractOp::create(
                b, loc, vector::BitCastOp::create(b, loc, oneWord, pair),
                ArrayRef<int64_t>{0});
            Value lhs = vector::BitCastOp::create(
                b, loc, pairs,
                vector::BroadcastOp::create(b, loc, words, word));
            for (int64_t y = 0; y < tv; ++y)
              acc[x * tv + y] = x86vector::DotBF16Op::create(
                  b, loc, f32, acc[x * tv + y], lhs, rhs[y]);
          }
          scf::YieldOp::create(b, loc, acc);
        }
        for (int64_t x = 0; x < tr; ++x)
          for (int64_t y = 0; y < tv; ++y)
            vector::StoreOp::create(b, loc, forOp.getResult(x * tv + y), c,
                                    ValueRange{cRows[x], cols[y]});
      });
    });
  }

  /// multiply on AMX tiles.
  void multiplyAmx(Value a16, Value b16, Value c, Value cRow, int64_t rows,
                   int64_t n, int64_t k) {
    int64_t ti = rows % (2 * kTile) == 0 ? 2 : 1;
    int64_t tj = n % (2 * kTile) == 0 ? 2 : 1;
    auto accType = amx::TileType::get({kTile, kTile}, b.getF32Type());
    auto opType = amx::TileType::get({kTile, kStepK}, b.getBF16Type());
    int64_t chunk = kStepK * kStepsPerChunk;
    loop(rows, kTile * ti, [&](Value i) {
      loop(n, kTile * tj, [&](Value j) {
        auto body = [&](Value k0, int64_t steps, bool zero) {
          SmallVector<Value> acc;
          for (int64_t x = 0; x < ti; ++x)
            for (int64_t y = 0; y < tj; ++y)
              acc.push_back(
                  zero ? amx::TileZeroOp::create(b, loc, accType).getResult()
                       : amx::TileLoadOp::create(
                             b, loc, accType, c,
                             ValueRange{
                                 add(arith::AddIOp::create(b, loc, cRow, i),
                                     x * kTile),
                                 add(j, y * kTile)})
                             .getResult());
          for (int64_t s = 0; s < steps; ++s) {
            Value kk = add(k0, s * kStepK);
            SmallVector<Value> lhs, rhs;
            for (int64_t x = 0; x < ti; ++x)
              lhs.push_back(amx::TileLoadOp::create(
                  b, loc, opType, a16, ValueRange{add(i, x * kTile), kk}));
            Value pairRow = arith::DivUIOp::create(b, loc, kk, index(2));
            for (int64_t y = 0; y < tj; ++y)
              rhs.push_back(amx::TileLoadOp::create(
                  b, loc, opType, b16,
                  ValueRange{pairRow, mul(add(j, y * kTile), 2)}));
            for (int64_t x = 0; x < ti; ++x)
              for (int64_t y = 0; y < tj; ++y)
                acc[x * tj + y] = amx::TileMulFOp::create(
                    b, loc, accType, lhs[x], rhs[y], acc[x * tj + y]);
          }
          for (int64_t x = 0; x < ti; ++x)
            for (int64_t y = 0; y < tj; ++y)
              amx::TileStoreOp::create(
                  b, loc, c,
                  ValueRange{add(arith::AddIOp::create(b, loc, cRow, i),
                                 x * kTile),
                             add(j, y * kTile)},
                  acc[x * tj + y]);
        };
        // From zero: the first chunk starts from zeros, the others from
        // what it stored.
        if (k <= chunk)
          body(index(0), k / kStepK, fromZero);
        else if (fromZero) {
          body(index(0), chunk / kStepK, true);
          loop(chunk, k, chunk,
               [&](Value k0) { body(k0, chunk / kStepK, false); });
        } else
          loop(k, chunk, [&](Value k0) { body(k0, chunk / kStepK, false); });
      });
    });
  }

private:
  OpBuilder &b;
  Location loc;
  Bf16Kernel kernel;
};

/// Whether `v` is even, as far as its definition shows: constants, products
/// with an even factor, sums and minima of evens, and induction variables
/// of loops that start and step evenly (the attention's key offsets).
bool isEven(Value v, int depth = 0) {
  if (depth > 16)
    return false;
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return *c % 2 == 0;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto forOp = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
    return forOp && arg == forOp.getInductionVar() &&
           isEven(forOp.getLowerBound(), depth + 1) &&
           isEven(forOp.getStep(), depth + 1);
  }
  Operation *def = v.getDefiningOp();
  if (isa<arith::MulIOp>(def))
    return isEven(def->getOperand(0), depth + 1) ||
           isEven(def->getOperand(1), depth + 1);
  if (isa<arith::AddIOp, arith::SubIOp, arith::MinSIOp, arith::MaxSIOp,
          arith::MinUIOp, arith::MaxUIOp>(def))
    return isEven(def->getOperand(0), depth + 1) &&
           isEven(def->getOperand(1), depth + 1);
  return false;
}

/// Whether dimension `dim` of `buffer` is even, as far as its definition
/// shows: a static size, an allocation's even size, or a collapsed group
/// with an even factor (the attention's packed buffers: tiles x tile rows).
bool isEvenDim(Value buffer, int64_t dim) {
  auto type = cast<MemRefType>(buffer.getType());
  if (!type.isDynamicDim(dim))
    return type.getDimSize(dim) % 2 == 0;
  if (auto alloc = buffer.getDefiningOp<memref::AllocOp>())
    return isEven(alloc.getDynamicSizes()[type.getDynamicDimIndex(dim)]);
  if (auto collapse = buffer.getDefiningOp<memref::CollapseShapeOp>())
    return llvm::any_of(
        collapse.getReassociationIndices()[dim],
        [&](int64_t d) { return isEvenDim(collapse.getSrc(), d); });
  return false;
}

/// Whether anything in `region` may write the buffer `root` or one that may
/// overlap it (mayAlias).
bool mayWrite(Operation *region, Value root) {
  WalkResult result = region->walk([&](Operation *op) {
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto iface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!iface)
      return WalkResult::interrupt(); // unknown effects
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const MemoryEffects::EffectInstance &e : effects) {
      if (!isa<MemoryEffects::Write>(e.getEffect()))
        continue;
      Value written = e.getValue();
      // AMX ops (the matmuls rewritten before this one) also write their
      // tile registers, a resource of their own: not memory.
      if (!written && isa<amx::AMXDialect>(op->getDialect()))
        continue;
      if (!written)
        return WalkResult::interrupt();
      if (hkt::mayAlias(written, root))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// Operands rounded to bf16 once, before the parallel loop they are read
/// in, instead of once per tile: a tile's operand that is a view of a
/// buffer defined outside the loop and written nowhere in it (the
/// attention's packed queries, keys and values) is read from a bf16 copy of
/// the whole buffer, in rows (left operands) or in pairs (right ones).
class Prerounded {
public:
  /// The operand `v` ([rows, cols]) as a view of a rounded copy of its
  /// buffer, or null where that does not apply.
  Value get(OpBuilder &b, Location loc, Value v, Operation *parallel,
            bool pairs) {
    auto view = v.getDefiningOp<memref::SubViewOp>();
    Value source = view ? view.getSource() : v;
    auto type = dyn_cast<MemRefType>(source.getType());
    if (!type || type.getRank() < 2 || !type.getLayout().isIdentity() ||
        !type.getElementType().isF32())
      return {};
    // Sizes may be known at run time only (a module for every length) but
    // for the columns; for pairs the rows of each matrix must be even.
    int64_t rank = type.getRank();
    int64_t cols = type.getDimSize(rank - 1);
    if (ShapedType::isDynamic(cols) || (pairs && !isEvenDim(source, rank - 2)))
      return {};
    Operation *def = source.getDefiningOp();
    if (!def)
      def = cast<BlockArgument>(source).getOwner()->getParentOp();
    if (parallel->isAncestor(def) || cols % kLanes ||
        mayWrite(parallel, source))
      return {};
    SmallVector<OpFoldResult> offsets, sizes, strides;
    if (view) {
      offsets = view.getMixedOffsets();
      sizes = view.getMixedSizes();
      strides = view.getMixedStrides();
    } else {
      sizes = memref::getMixedSizes(b, loc, source);
      offsets.assign(rank, b.getIndexAttr(0));
      strides.assign(rank, b.getIndexAttr(1));
    }
    if (llvm::any_of(strides,
                     [](OpFoldResult s) { return !isConstantIntValue(s, 1); }))
      return {};
    if (pairs) {
      // Whole rows of pairs: all columns, from an even row.
      std::optional<int64_t> height = getConstantIntValue(sizes[rank - 2]);
      if (!isConstantIntValue(offsets[rank - 1], 0) ||
          !isConstantIntValue(sizes[rank - 1], cols) || !height || *height % 2)
        return {};
      if (std::optional<int64_t> row = getConstantIntValue(offsets[rank - 2])) {
        if (*row % 2)
          return {};
        offsets[rank - 2] = b.getIndexAttr(*row / 2);
      } else {
        Value rowOffset = cast<Value>(offsets[rank - 2]);
        if (!isEven(rowOffset))
          return {};
        offsets[rank - 2] =
            arith::DivUIOp::create(b, loc, rowOffset,
                                   arith::ConstantIndexOp::create(b, loc, 2))
                .getResult();
      }
      sizes[rank - 2] = b.getIndexAttr(*height / 2);
      sizes[rank - 1] = b.getIndexAttr(2 * cols);
    }
    Value rounded = round(b, loc, source, parallel, pairs);
    auto roundedType = cast<MemRefType>(rounded.getType());
    auto viewShape = cast<MemRefType>(v.getType()).getShape();
    SmallVector<int64_t> shape(viewShape);
    if (pairs)
      shape = {shape[0] / 2, shape[1] * 2};
    MemRefType resultType = memref::SubViewOp::inferRankReducedResultType(
        shape, roundedType, offsets, sizes, strides);
    return memref::SubViewOp::create(b, loc, resultType, rounded, offsets,
                                     sizes, strides);
  }

private:
  /// The bf16 copy of `source` before `parallel` (made once per buffer,
  /// kind and loop), freed after it.
  Value round(OpBuilder &b, Location loc, Value source, Operation *parallel,
              bool pairs) {
    auto key = std::make_tuple(parallel, source, unsigned(pairs));
    if (Value done = copies.lookup(key))
      return done;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(parallel);
    Rewriter r(b, loc);
    auto type = cast<MemRefType>(source.getType());
    int64_t rank = type.getRank();
    SmallVector<int64_t> shape(type.getShape());
    int64_t cols = shape[rank - 1];
    if (pairs) {
      if (!type.isDynamicDim(rank - 2))
        shape[rank - 2] /= 2;
      shape[rank - 1] *= 2;
    }
    SmallVector<Value> dynamicSizes;
    for (int64_t d = 0; d < rank; ++d) {
      if (!type.isDynamicDim(d))
        continue;
      Value size = memref::DimOp::create(b, loc, source, d);
      if (pairs && d == rank - 2)
        size = arith::DivUIOp::create(b, loc, size, r.index(2));
      dynamicSizes.push_back(size);
    }
    Value copy = memref::AllocOp::create(
        b, loc, MemRefType::get(shape, b.getBF16Type()), dynamicSizes);
    // As 2-D buffers: [rows, cols] -> [rows, cols] or [rows / 2, 2 cols]
    // (a pair never straddles two matrices: each has an even row count).
    SmallVector<ReassociationIndices> flat = {
        llvm::to_vector(llvm::seq<int64_t>(0, rank - 1)), {rank - 1}};
    Value src2d = source, dst2d = copy;
    if (rank > 2) {
      src2d = memref::CollapseShapeOp::create(b, loc, source, flat);
      dst2d = memref::CollapseShapeOp::create(b, loc, copy, flat);
    }
    // Blocks of rows in parallel (of one row where the count is known at
    // run time only).
    OpFoldResult count;
    int64_t block = 1;
    if (type.hasStaticShape()) {
      int64_t units = type.getNumElements() / cols / (pairs ? 2 : 1);
      block = std::gcd<int64_t>(units, 64);
      count = b.getIndexAttr(units / block);
    } else {
      Value allRows = memref::DimOp::create(b, loc, src2d, 0);
      count =
          pairs
              ? arith::DivUIOp::create(b, loc, allRows, r.index(2)).getResult()
              : allRows;
    }
    auto forall = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{count},
                                        ValueRange{}, std::nullopt);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(forall.getBody());
      Value first = r.mul(forall.getInductionVar(0), block);
      if (pairs)
        r.roundPairs(src2d, first, block, cols, dst2d);
      else
        r.roundRows(src2d, first, block, cols, dst2d, /*dstOffset=*/first);
    }
    b.setInsertionPointAfter(parallel);
    memref::DeallocOp::create(b, loc, copy);
    copies[key] = copy;
    return copy;
  }

  DenseMap<std::tuple<Operation *, Value, unsigned>, Value> copies;
};

/// The matmul on bf16 operands (`kernel`'s instructions), or failure (left
/// as it is) where its shape or layout does not fit them.
LogicalResult rewrite(linalg::MatmulOp op, Prerounded &prerounded,
                      Bf16Kernel kernel) {
  if (!op.hasPureBufferSemantics() ||
      op.getIndexingMapsArray() !=
          linalg::MatmulOp::getDefaultIndexingMaps(op.getContext()))
    return failure();
  Value a = op.getDpsInputs()[0], bMat = op.getDpsInputs()[1],
        c = op.getDpsInits()[0];
  int64_t m, k, k2, n, m2, n2;
  if (!isRowMajorF32(a, m, k) || !isRowMajorF32(bMat, k2, n) ||
      !isRowMajorF32(c, m2, n2) || k != k2 || m != m2 || n != n2 ||
      ShapedType::isDynamic(k))
    return failure();
  // AMX: K a whole number of chunks when it spans several; within one
  // chunk, a K of 16 more than a whole number of steps is padded with zeros
  // (the dot products take any K so padded).
  int64_t chunk = kStepK * kStepsPerChunk;
  if (n % kTile || k % kLanes ||
      (kernel == Bf16Kernel::Amx && k > chunk && k % chunk))
    return failure();
  int64_t kp = llvm::alignTo(k, kStepK);
  Operation *parallel = op->getParentOfType<scf::ForallOp>();
  if (!parallel)
    parallel = op->getParentOfType<scf::ParallelOp>();
  // A tile's rows are whole accumulator tiles; a whole matmul's may be
  // anything (the last block padded), or known at run time only.
  if (parallel && (ShapedType::isDynamic(m) || m % kTile))
    return failure();

  // C zero-filled just before, inside a parallel loop (an attention tile's
  // scores): the accumulators start at zero and the fill goes. A whole
  // matmul (a projection) keeps its fill and loads C: dropping it there too
  // measured MHA's bf16 layer faster but HKT's 2-4% slower, about this
  // host's noise, for no reason found (docs/performance.md); not done until
  // a quieter measurement says which.
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  bool fromZero = fill && parallel && fill.hasPureBufferSemantics() &&
                  fill.getDpsInits()[0] == c &&
                  matchPattern(fill.getInputs()[0], m_PosZeroFloat());

  OpBuilder b(op);
  Location loc = op.getLoc();
  Rewriter r(b, loc, kernel);
  r.fromZero = fromZero;
  auto bf16 = b.getBF16Type();
  auto pairsType = MemRefType::get({kp / 2, 2 * n}, bf16);
  // Its bf16 copies on a thread's stack: a few tiles' worth, not a
  // projection's (OpenMP workers have a few MiB).
  constexpr int64_t kMaxStackBytes = 512 * 1024;
  if (parallel && (m * kp + kp * n) * 2 > kMaxStackBytes)
    return failure();
  if (parallel) {
    // Inside a parallel loop (an attention tile): the bf16 copies on the
    // stack, allocated at the start of the parallel body (whose iterations
    // free them: scf-to-openmp gives each an alloca scope), not in the
    // sequential loops around the matmul, where they would pile up.
    Value a16 = kp == k ? prerounded.get(b, loc, a, parallel, false) : Value();
    Value b16 =
        kp == k ? prerounded.get(b, loc, bMat, parallel, true) : Value();
    bool roundA = !a16, roundB = !b16;
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&parallel->getRegion(0).front());
      if (roundA) {
        a16 = memref::AllocaOp::create(b, loc, MemRefType::get({m, kp}, bf16));
        // The padding once: the conversions never write it.
        r.zeroColumns(a16, m, k, kp);
      }
      if (roundB) {
        b16 = memref::AllocaOp::create(b, loc, pairsType);
        r.zeroRows(b16, k / 2, kp / 2, 2 * n);
      }
    }
    if (roundA)
      r.roundRows(a, r.index(0), m, k, a16);
    if (roundB)
      r.roundPairs(bMat, k, n, b16);
    r.multiply(a16, b16, c, r.index(0), m, n, kp);
  } else {
    // A whole matmul (a projection): the right operand once, then blocks
    // of rows in parallel, each rounding its own rows of the left one; the
    // rows past the last whole block (M not a multiple of it, or M known at
    // run time only) through a zero-padded block of their own.
    Value b16 = memref::AllocOp::create(b, loc, pairsType);
    r.zeroRows(b16, k / 2, kp / 2, 2 * n);
    r.roundPairs(bMat, k, n, b16);
    bool dynamic = ShapedType::isDynamic(m);
    int64_t block = !dynamic && m % 64 && m % 32 == 0   ? 32
                    : !dynamic && m % 64 && m % 16 == 0 ? kTile
                                                        : 64;
    Value rows =
        dynamic ? memref::DimOp::create(b, loc, a, 0).getResult() : r.index(m);
    Value blocks =
        dynamic
            ? arith::DivUIOp::create(b, loc, rows, r.index(block)).getResult()
            : r.index(m / block);
    OpFoldResult count = dynamic ? OpFoldResult(blocks)
                                 : OpFoldResult(b.getIndexAttr(m / block));
    auto forall = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{count},
                                        ValueRange{}, std::nullopt);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(forall.getBody());
      Value a16 =
          memref::AllocaOp::create(b, loc, MemRefType::get({block, kp}, bf16));
      Value row = r.mul(forall.getInductionVar(0), block);
      r.zeroColumns(a16, block, k, kp);
      r.roundRows(a, row, block, k, a16);
      r.multiply(a16, b16, c, row, block, n, kp);
    }
    if (dynamic || m % block)
      r.lastRows(a, b16, c, r.mul(blocks, block), rows, block, n, k, kp);
    memref::DeallocOp::create(b, loc, b16);
  }
  op.erase();
  if (fromZero)
    fill.erase();
  return success();
}

void rewriteAll(Operation *root, Bf16Kernel kernel) {
  SmallVector<linalg::MatmulOp> matmuls;
  root->walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
  Prerounded prerounded;
  for (linalg::MatmulOp op : matmuls)
    (void)rewrite(op, prerounded, kernel);
}

struct HktCpuAmxMatmulPass
    : hkt::impl::HktCpuAmxMatmulPassBase<HktCpuAmxMatmulPass> {
  void runOnOperation() override {
    rewriteAll(getOperation(), Bf16Kernel::Amx);
  }
};

struct HktCpuAvx512Bf16MatmulPass
    : hkt::impl::HktCpuAvx512Bf16MatmulPassBase<HktCpuAvx512Bf16MatmulPass> {
  void runOnOperation() override {
    rewriteAll(getOperation(), Bf16Kernel::Avx512Dot);
  }
};

} // namespace
