//===- CpuCodegen.cpp - hkt-cpu-codegen -----------------------------------===//
//
// Sorts the structured ops on memrefs into classes (whole matmuls, matmuls
// in loop nests, row-wise ops, 1-D ops, ops split across threads), each with
// its tile sizes from the per-target table (CpuTuning.h), and applies the
// recipe library passes/codegen/cpu/recipes/cpu-codegen.mlir to them with the upstream
// transform interpreter. The library is checked-in transform IR, embedded at
// build time; the only transform IR built here is a small driver, with the
// builders: one transform.foreach per class that includes the class's named
// sequence with the tile sizes as !transform.param<i64> constants.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/cpu/CpuTuning.h"
#include "passes/codegen/cpu/Passes.h"
#include "passes/codegen/cpu/RightOperandPanels.h"
#include "runtime/ModuleFormat.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/TransformOps/LinalgTransformOps.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/IR/TransformTypes.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <map>
#include <numeric>

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTCPUCODEGENPASS
#include "passes/codegen/cpu/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;

namespace {
/// passes/codegen/cpu/recipes/cpu-codegen.mlir, as a string literal made at build time
/// (passes/CMakeLists.txt): hkt-compile needs no source tree.
constexpr llvm::StringLiteral kRecipe =
#include "passes/codegen/cpu/recipes/cpu-codegen.mlir.inc"
    ;
/// The name its diagnostics carry (`cpu-codegen.mlir:LINE:COL`).
constexpr llvm::StringLiteral kRecipeName = "cpu-codegen.mlir";

/// One class of ops and the sequence of the library that handles it, with
/// its tile sizes. Tiles divide the op's shape exactly, so every tile is
/// static (vectorisation needs static shapes).
struct Tiles {
  enum Kind {
    Gemm,         // @hkt_gemm: a whole matmul: threads, cache tiles, registers
    GemmDynamic,  // @hkt_gemm_dynamic: the same with a dynamic number of
                  // rows (the register tiles' row loop peeled)
    GemmDynamicK, // @hkt_gemm_dynamic_k[_split]: the same with a dynamic
                  // K (the cache tiles' K loop peeled)
    TileGemm,     // @hkt_tile_gemm: a matmul inside a loop nest: registers only
    Rows,         // @hkt_rows_<rank>d: an elementwise or row-reduction op in a
                  // loop nest, one row at a time
    Whole,        // @hkt_whole: a 1-D op, vectorised as it is
    Split         // @hkt_split: another op outside the loop nests, split across
                  // threads along one parallel loop, then (@hkt_rows_<rank>d)
                  // vectorised by rows when its rows are contiguous
  } kind;
  int64_t rows = 0, cacheN = 0, cacheK = 0, regM = 0, regN = 0, regK = 1;
  /// Gemm, TileGemm: rows [0, split) take regM-row register tiles, the
  /// rest regM2-row ones (split 0: all rows regM).
  int64_t split = 0, regM2 = 0;
  std::vector<int64_t> threadSizes; // Split: one per loop
  /// Rows, Split: the rank of the row-wise tiling (0: none) and its
  /// innermost tile size (0: the whole row).
  int64_t rowRank = 0, rowInner = 0;
  bool operator<(const Tiles &o) const {
    return std::tie(kind, rows, cacheN, cacheK, regM, regN, regK, split,
                    regM2, threadSizes, rowRank, rowInner) <
           std::tie(o.kind, o.rows, o.cacheN, o.cacheK, o.regM, o.regN,
                    o.regK, o.split, o.regM2, o.threadSizes, o.rowRank,
                    o.rowInner);
  }
};

/// The library's row-wise sequence for ops of `rank` loops.
std::string rowsSequence(int64_t rank) {
  return "hkt_rows_" + std::to_string(rank) + "d";
}

bool staticF32(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  return t && t.hasStaticShape() && t.getElementType().isF32();
}

/// Not a memref, or an f32 one (of any shape).
bool nonMemrefOrF32(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  return !t || t.getElementType().isF32();
}

/// A whole matmul whose reduction (K) is dynamic and M, N static: a weight
/// gradient summed over a dynamic sequence.
bool isDynamicReductionMatmul(linalg::MatmulOp mm) {
  auto a = dyn_cast<MemRefType>(mm.getDpsInputs()[0].getType());
  auto b = dyn_cast<MemRefType>(mm.getDpsInputs()[1].getType());
  auto c = dyn_cast<MemRefType>(mm.getDpsInits()[0].getType());
  return a && b && c && c.hasStaticShape() && a.isDynamicDim(1) &&
         !b.isDynamicDim(1) &&
         mm.getIndexingMapsArray() ==
             mm.getDefaultIndexingMaps(mm.getContext());
}

/// A whole matmul whose rows (M) are dynamic and N, K static: the
/// projections of a layer with a dynamic sequence length.
bool isDynamicRowsMatmul(linalg::MatmulOp mm) {
  auto a = dyn_cast<MemRefType>(mm.getDpsInputs()[0].getType());
  auto b = dyn_cast<MemRefType>(mm.getDpsInputs()[1].getType());
  auto c = dyn_cast<MemRefType>(mm.getDpsInits()[0].getType());
  return a && b && c && b.hasStaticShape() && !a.isDynamicDim(1) &&
         !c.isDynamicDim(1) && c.isDynamicDim(0) &&
         mm.getIndexingMapsArray() ==
             mm.getDefaultIndexingMaps(mm.getContext());
}

/// Every operand is read and written along the innermost loop (so a row of
/// it is a contiguous vector).
bool readsAlongInnermost(linalg::LinalgOp op) {
  unsigned loops = op.getNumLoops();
  return llvm::all_of(op.getIndexingMapsArray(), [&](AffineMap m) {
    return m.getNumResults() > 0 &&
           m.getResults().back() == getAffineDimExpr(loops - 1, m.getContext());
  });
}

/// An operand is a reshaped view (memref.expand_shape / collapse_shape): the
/// MLIR 22 vector patterns loop forever on row-wise vectorisation of such an
/// op (seen on GELU over the expanded result of the feed-forward matmul), so
/// it is split across threads but keeps its scalar body.
bool readsReshapedView(linalg::LinalgOp op) {
  return llvm::any_of(op->getOperands(), [](Value v) {
    return isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp>(
        v.getDefiningOp());
  });
}

bool outerLoopsParallel(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> it = op.getIteratorTypesArray();
  return llvm::all_of(ArrayRef(it).drop_back(), [](utils::IteratorType t) {
    return t == utils::IteratorType::parallel;
  });
}

/// An op outside the loop nests (downsampling, the hybrid head, packing,
/// normalisation, fills): split across threads into `splitParts` (or half,
/// a quarter...) equal parts along its first parallel loop of at least
/// `minSplitLoop` iterations; when its rows are contiguous in every operand
/// (elementwise ops, fills), each part is vectorised row by row.
std::optional<Tiles> splitFor(linalg::LinalgOp op, const CpuTuning &tuning) {
  if (!isa<linalg::GenericOp, linalg::FillOp, linalg::CopyOp,
           linalg::TransposeOp, linalg::AddOp>(op))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  // Dynamic operands (a dynamic sequence length): split along a static
  // loop; rows vectorised only when the innermost loop is static too.
  bool dynamic = !llvm::all_of(op->getOperands(), [](Value v) {
    return !isa<MemRefType>(v.getType()) || staticF32(v);
  });
  for (unsigned p = 0; p < ranges.size(); ++p) {
    bool dynamicLoop = ShapedType::isDynamic(ranges[p]);
    // With dynamic operands, the first dynamic loop (the sequence) is split
    // in blocks of threadRows (the last one may be short); else the first
    // static loop long enough, in splitParts equal parts.
    if (iterators[p] != utils::IteratorType::parallel ||
        (dynamic ? !dynamicLoop || p + 1 == ranges.size()
                 : dynamicLoop || ranges[p] < tuning.minSplitLoop))
      continue;
    int64_t block = tuning.threadRows;
    if (!dynamicLoop) {
      int64_t parts = tuning.splitParts;
      while (parts > 1 && ranges[p] % parts != 0)
        parts /= 2;
      if (parts == 1)
        return std::nullopt;
      block = ranges[p] / parts;
    }
    Tiles t{Tiles::Split};
    t.threadSizes.assign(ranges.size(), 0);
    t.threadSizes[p] = block;
    // Rows contiguous in every operand: vectorised in pieces of rowTile.
    // Generics, fills and adds (the gradient sums) only: the vector
    // patterns loop forever on copies into strided views and on transposes
    // here (MLIR 22).
    if (p + 1 < ranges.size() && readsAlongInnermost(op) &&
        outerLoopsParallel(op) && !readsReshapedView(op) &&
        !ShapedType::isDynamic(ranges.back()) &&
        isa<linalg::GenericOp, linalg::FillOp, linalg::AddOp>(op)) {
      t.rowRank = ranges.size();
      t.rowInner = ranges.back() % tuning.rowTile == 0 ? tuning.rowTile : 0;
    }
    return t;
  }
  return std::nullopt;
}

/// The register tiles of a matmul of `n` columns whose rows come in blocks
/// of `rows` (a thread block; TileGemm: the whole op) and, but for
/// TileGemm, its thread blocks and cache columns; cacheK is the caller's.
/// None when no vector width divides n.
std::optional<Tiles> gemmTiles(Tiles::Kind kind, int64_t rows, int64_t n,
                               int64_t regK, int64_t vectorBits,
                               const CpuTuning &tuning) {
  Tiles t{kind};
  int64_t lanes = std::max<int64_t>(vectorBits / 32, 1);
  int64_t wide = tuning.regVectors * lanes;
  t.regM = tuning.regRows;
  t.regN = n % wide == 0 ? wide : n % lanes == 0 ? lanes : 0;
  if (t.regN == 0)
    return std::nullopt;
  t.regK = regK;
  // The rows beyond the last whole register tile get a register tile of
  // their own height. Fewer than 4 register tiles of rows: the tallest tile
  // that divides them instead (8 rows: two 4-row tiles, not 6 + 2).
  if (rows % t.regM != 0 && rows < 4 * t.regM)
    while (rows % t.regM != 0)
      --t.regM;
  if (int64_t rest = rows % t.regM) {
    t.split = rows - rest;
    t.regM2 = rest;
  }
  if (kind == Tiles::TileGemm)
    return t;
  t.rows = rows;
  t.cacheN = std::gcd(n, tuning.cacheN);
  if (t.cacheN % t.regN != 0)
    return std::nullopt;
  return t;
}

/// True when `op` is inside a loop nest of the lowering (an attention
/// tile's), not at the level of a whole op: a batched entry's loop over the
/// rows (hkt.row_loop, BatchedEntry.h) runs whole ops once per row.
bool inLoopNest(Operation *op) {
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (isa<scf::ForallOp, scf::ForOp>(p) &&
        !p->hasAttr(::hkt::format::attr::kRowLoop))
      return true;
  return false;
}

/// How the recipe treats `op`, if it covers it: static f32 shapes whose
/// tiles divide exactly (vectorisation needs static shapes).
std::optional<Tiles> tilesFor(linalg::LinalgOp op, int64_t vectorBits,
                              const CpuTuning &tuning) {
  if (!op.hasPureBufferSemantics() ||
      !llvm::all_of(op->getOperands(), nonMemrefOrF32))
    return std::nullopt;
  bool inLoop = inLoopNest(op);
  bool allStatic = llvm::all_of(op->getOperands(), [](Value v) {
    return !isa<MemRefType>(v.getType()) || staticF32(v);
  });
  if (!allStatic) {
    // A dynamic sequence length: whole matmuls with dynamic rows, and the
    // ops outside the loop nests split along a static loop.
    if (inLoop)
      return std::nullopt;
    auto mm = dyn_cast<linalg::MatmulOp>(op.getOperation());
    if (!mm)
      return splitFor(op, tuning);
    if (isDynamicReductionMatmul(mm)) {
      auto c = cast<MemRefType>(mm.getDpsInits()[0].getType());
      int64_t m = c.getDimSize(0), n = c.getDimSize(1);
      std::optional<Tiles> t =
          gemmTiles(Tiles::GemmDynamicK, std::gcd(m, tuning.threadRows), n,
                    tuning.regK, vectorBits, tuning);
      if (!t)
        return std::nullopt;
      // cacheK a multiple of regK: whole cache tiles have whole K steps.
      t->cacheK = tuning.cacheK / t->regK * t->regK;
      return t->cacheK ? t : std::nullopt;
    }
    if (!isDynamicRowsMatmul(mm))
      return std::nullopt;
    auto a = cast<MemRefType>(mm.getDpsInputs()[0].getType());
    auto c = cast<MemRefType>(mm.getDpsInits()[0].getType());
    int64_t n = c.getDimSize(1), k = a.getDimSize(1);
    // Blocks of whole register tiles: only the last block has a remainder.
    int64_t rows = std::max(tuning.threadRows / tuning.regRows, int64_t(1)) *
                   tuning.regRows;
    std::optional<Tiles> t =
        gemmTiles(Tiles::GemmDynamic, rows, n, std::gcd(k, tuning.regK),
                  vectorBits, tuning);
    if (t)
      t->cacheK = std::gcd(k, tuning.cacheK);
    return t;
  }
  if (auto mm = dyn_cast<linalg::MatmulOp>(op.getOperation())) {
    auto a = cast<MemRefType>(mm.getDpsInputs()[0].getType());
    auto c = cast<MemRefType>(mm.getDpsInits()[0].getType());
    int64_t m = c.getDimSize(0), n = c.getDimSize(1), k = a.getDimSize(1);
    if (inLoop)
      return gemmTiles(Tiles::TileGemm, m, n, std::gcd(k, tuning.regK),
                       vectorBits, tuning);
    std::optional<Tiles> t =
        gemmTiles(Tiles::Gemm, std::gcd(m, tuning.threadRows), n,
                  std::gcd(k, tuning.regK), vectorBits, tuning);
    if (t)
      t->cacheK = std::gcd(k, tuning.cacheK);
    return t;
  }
  if (!inLoop)
    return splitFor(op, tuning);
  // The small ops of the attention tiles (inside the loop nest).
  if (!isa<linalg::GenericOp, linalg::FillOp, linalg::CopyOp>(op))
    return std::nullopt;
  if (op.getNumLoops() == 0) // scalars (a batch's per-chunk loss)
    return std::nullopt;
  if (op.getNumLoops() == 1)
    return Tiles{Tiles::Whole};
  // Beyond 2-D, only ops that read and write every operand along the
  // innermost loop: the strided 4-D broadcast of a coarse level block
  // (keys in order) sends the vector patterns below into an endless
  // rewrite loop (seen with MLIR 22), so it stays as loops; so do rank-3
  // copies between strided views (the tiles that upstream tiling inserts
  // back into a B x T x D destination).
  unsigned loops = op.getNumLoops();
  if ((loops > 2 && !readsAlongInnermost(op)) || !outerLoopsParallel(op) ||
      (loops > 2 && isa<linalg::CopyOp>(op)))
    return std::nullopt;
  Tiles t{Tiles::Rows};
  t.rowRank = loops; // every loop but the innermost by 1, whole rows
  return t;
}

/// Builds the driver `__transform_main(%root, %class0, %class1, ...)` into
/// `library`: each class argument is bound to the ops of that class; for
/// each op, the class's sequence is included with its tile sizes as params.
/// Then @hkt_prepare_vectors runs on every function.
///
///   transform.foreach %class0 : !transform.any_op {
///   ^bb0(%op: !transform.any_op):
///     %rm = transform.param.constant 4 : i64 -> !transform.param<i64>
///     ...
///     transform.include @hkt_tile_gemm failures(propagate) (%op, %rm, %rn, %rk)
///   }
void buildDriver(ModuleOp library, ArrayRef<Tiles> classes) {
  MLIRContext *ctx = library.getContext();
  Location loc = NameLoc::get(StringAttr::get(ctx, "hkt-cpu-codegen driver"));
  auto anyOp = transform::AnyOpType::get(ctx);
  auto param = transform::ParamType::get(ctx, IntegerType::get(ctx, 64));
  OpBuilder b = OpBuilder::atBlockEnd(library.getBody());

  SmallVector<Type> argTypes(classes.size() + 1, anyOp);
  auto readonly = b.getDictionaryAttr(b.getNamedAttr(
      transform::TransformDialect::kArgReadOnlyAttrName, b.getUnitAttr()));
  auto consumed = b.getDictionaryAttr(b.getNamedAttr(
      transform::TransformDialect::kArgConsumedAttrName, b.getUnitAttr()));
  SmallVector<Attribute> argAttrs(classes.size() + 1, consumed);
  argAttrs[0] = readonly;
  auto main = transform::NamedSequenceOp::create(
      b, loc, transform::TransformDialect::kTransformEntryPointSymbolName,
      TypeAttr::get(b.getFunctionType(argTypes, {})),
      /*sym_visibility=*/StringAttr(), b.getArrayAttr(argAttrs),
      /*res_attrs=*/ArrayAttr());
  Block *body = b.createBlock(&main.getBody(), main.getBody().end(), argTypes,
                              SmallVector<Location>(argTypes.size(), loc));

  auto constant = [&](int64_t v) -> Value {
    return transform::ParamConstantOp::create(b, loc, param,
                                              b.getI64IntegerAttr(v));
  };
  auto include = [&](StringRef name, ValueRange args,
                     TypeRange results = {}) {
    return transform::IncludeOp::create(
        b, loc, results, SymbolRefAttr::get(ctx, name),
        transform::FailurePropagationMode::Propagate, args,
        /*arg_attrs=*/ArrayAttr(), /*res_attrs=*/ArrayAttr());
  };
  for (auto [i, t] : llvm::enumerate(classes)) {
    auto foreach = transform::ForeachOp::create(
        b, loc, TypeRange(), ValueRange{body->getArgument(i + 1)},
        /*with_zip_shortest=*/false);
    Block *each = b.createBlock(&foreach.getBody(), foreach.getBody().end(),
                                {anyOp}, {loc});
    Value op = each->getArgument(0);
    switch (t.kind) {
    case Tiles::Gemm:
      if (t.split)
        include("hkt_gemm_split",
                {op, constant(t.rows), constant(t.cacheN), constant(t.cacheK),
                 constant(t.regM), constant(t.regN), constant(t.regK),
                 constant(t.split), constant(t.regM2)});
      else
        include("hkt_gemm", {op, constant(t.rows), constant(t.cacheN),
                             constant(t.cacheK), constant(t.regM),
                             constant(t.regN), constant(t.regK)});
      break;
    case Tiles::GemmDynamic:
      include("hkt_gemm_dynamic",
              {op, constant(t.rows), constant(t.cacheN), constant(t.cacheK),
               constant(t.regM), constant(t.regN), constant(t.regK)});
      break;
    case Tiles::GemmDynamicK:
      if (t.split)
        include("hkt_gemm_dynamic_k_split",
                {op, constant(t.rows), constant(t.cacheN), constant(t.cacheK),
                 constant(t.regM), constant(t.regN), constant(t.regK),
                 constant(t.split), constant(t.regM2)});
      else
        include("hkt_gemm_dynamic_k",
                {op, constant(t.rows), constant(t.cacheN), constant(t.cacheK),
                 constant(t.regM), constant(t.regN), constant(t.regK)});
      break;
    case Tiles::TileGemm:
      if (t.split)
        include("hkt_tile_gemm_split",
                {op, constant(t.regM), constant(t.regN), constant(t.regK),
                 constant(t.split), constant(t.regM2)});
      else
        include("hkt_tile_gemm",
                {op, constant(t.regM), constant(t.regN), constant(t.regK)});
      break;
    case Tiles::Whole:
      include("hkt_whole", {op});
      break;
    case Tiles::Rows:
      include(rowsSequence(t.rowRank), {op, constant(t.rowInner)});
      break;
    case Tiles::Split: {
      // One packed param: the thread tile of every loop.
      SmallVector<Value> sizes = llvm::map_to_vector(
          t.threadSizes, [&](int64_t s) { return constant(s); });
      Value packed = transform::MergeHandlesOp::create(b, loc, param, sizes,
                                                       /*deduplicate=*/false);
      Value part = include("hkt_split", {op, packed}, {anyOp}).getResult(0);
      if (t.rowRank)
        include(rowsSequence(t.rowRank), {part, constant(t.rowInner)});
      break;
    }
    }
    transform::YieldOp::create(b, loc);
    b.setInsertionPointToEnd(body);
  }
  Value funcs = transform::MatchOp::create(b, loc, body->getArgument(0),
                                           ArrayRef<StringRef>{"func.func"});
  include("hkt_prepare_vectors", {funcs});
  transform::YieldOp::create(b, loc);
}

/// The second entry, run after the accumulators are hoisted:
/// `__hkt_lower_main(%root)` includes @hkt_lower_vectors on every function.
constexpr llvm::StringLiteral kLowerEntry = "__hkt_lower_main";
void buildLowerDriver(ModuleOp library) {
  MLIRContext *ctx = library.getContext();
  Location loc = NameLoc::get(StringAttr::get(ctx, "hkt-cpu-codegen driver"));
  auto anyOp = transform::AnyOpType::get(ctx);
  OpBuilder b = OpBuilder::atBlockEnd(library.getBody());
  auto readonly = b.getDictionaryAttr(b.getNamedAttr(
      transform::TransformDialect::kArgReadOnlyAttrName, b.getUnitAttr()));
  auto entry = transform::NamedSequenceOp::create(
      b, loc, kLowerEntry, TypeAttr::get(b.getFunctionType({anyOp}, {})),
      /*sym_visibility=*/StringAttr(), b.getArrayAttr({readonly}),
      /*res_attrs=*/ArrayAttr());
  Block *body = b.createBlock(&entry.getBody(), entry.getBody().end(), {anyOp},
                              {loc});
  Value funcs = transform::MatchOp::create(b, loc, body->getArgument(0),
                                           ArrayRef<StringRef>{"func.func"});
  transform::IncludeOp::create(
      b, loc, TypeRange(), SymbolRefAttr::get(ctx, "hkt_lower_vectors"),
      transform::FailurePropagationMode::Propagate, ValueRange{funcs},
      /*arg_attrs=*/ArrayAttr(), /*res_attrs=*/ArrayAttr());
  transform::YieldOp::create(b, loc);
}

/// Gives the right operand of every whole matmul whose rows lie a multiple
/// of 1 KiB apart a copy with `pad` more elements per row. Rows 2 KiB apart
/// (a 512-wide weight) fall into two of L1's 64 sets, so the K x regN panel
/// that a register tile streams does not stay in L1 across the row tiles;
/// 2112-byte rows spread over all sets. The copy (K x N elements) is small
/// beside the matmul (2 M K N flops, M >= minRows). After the recipe the
/// copy becomes column panels where the reads allow (RightOperandPanels.h);
/// returns the copies.
SmallVector<memref::AllocOp> padRightOperands(ModuleOp module, int64_t pad,
                                              int64_t minRows) {
  SmallVector<memref::AllocOp> copies;
  if (pad <= 0)
    return copies;
  SmallVector<linalg::MatmulOp> matmuls;
  module.walk([&](linalg::MatmulOp mm) {
    if (!inLoopNest(mm) && mm.hasPureBufferSemantics())
      matmuls.push_back(mm);
  });
  for (linalg::MatmulOp mm : matmuls) {
    Value rhs = mm.getDpsInputs()[1];
    auto type = dyn_cast<MemRefType>(rhs.getType());
    auto out = dyn_cast<MemRefType>(mm.getDpsInits()[0].getType());
    // Dynamic rows (a dynamic sequence length) count as many.
    if (!type || !out || !type.hasStaticShape() || out.isDynamicDim(1) ||
        !type.getElementType().isF32() ||
        (!out.isDynamicDim(0) && out.getDimSize(0) < minRows) ||
        mm.hasUserDefinedMaps()) // B read as (k, n), not transposed
      continue;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        strides[1] != 1 || ShapedType::isDynamic(strides[0]) ||
        (strides[0] * 4) % 1024 != 0)
      continue;
    int64_t k = type.getDimSize(0), n = type.getDimSize(1);
    OpBuilder b(mm);
    Location loc = mm.getLoc();
    auto paddedType = MemRefType::get({k, n + pad}, type.getElementType());
    auto padded =
        memref::AllocOp::create(b, loc, paddedType, b.getI64IntegerAttr(64));
    copies.push_back(padded);
    Value view = memref::SubViewOp::create(
        b, loc, padded, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(k), b.getIndexAttr(n)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
    linalg::CopyOp::create(b, loc, rhs, view);
    mm->setOperand(1, view);
    b.setInsertionPointAfter(mm);
    memref::DeallocOp::create(b, loc, padded);
  }
  return copies;
}

/// `vector.reduction <maximumf>` over a 1-D float vector of 2^k lanes as
/// k halvings (extract_strided_slice, cmpf ogt, select), then the same with
/// the accumulator if any. See the call for why.
void reduceMaximumBySelects(vector::ReductionOp op) {
  VectorType type = op.getSourceVectorType();
  int64_t n = type.getNumElements();
  if (type.getRank() != 1 || type.isScalable() || n < 2 ||
      !llvm::isPowerOf2_64(n) || !isa<FloatType>(type.getElementType()))
    return;
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value v = op.getVector();
  for (; n > 1; n /= 2) {
    Value lo = vector::ExtractStridedSliceOp::create(
        b, loc, v, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{n / 2},
        ArrayRef<int64_t>{1});
    Value hi = vector::ExtractStridedSliceOp::create(
        b, loc, v, ArrayRef<int64_t>{n / 2}, ArrayRef<int64_t>{n / 2},
        ArrayRef<int64_t>{1});
    Value greater =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, lo, hi);
    v = arith::SelectOp::create(b, loc, greater, lo, hi);
  }
  Value max = vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{0});
  if (Value acc = op.getAcc()) {
    Value greater =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, max, acc);
    max = arith::SelectOp::create(b, loc, greater, max, acc);
  }
  op.replaceAllUsesWith(max);
  op.erase();
}

struct HktCpuCodegenPass
    : public mlir::hkt::impl::HktCpuCodegenPassBase<HktCpuCodegenPass> {
  using HktCpuCodegenPassBase::HktCpuCodegenPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OwningOpRef<ModuleOp> library = parseSourceString<ModuleOp>(
        kRecipe, ParserConfig(&getContext()), kRecipeName);
    if (!library) {
      // The parser has reported where (cpu-codegen.mlir:LINE:COL); no dump
      // of the payload with this one.
      emitError(module.getLoc())
          << "internal error: the codegen recipe library " << kRecipeName
          << " does not parse";
      return signalPassFailure();
    }

    // The target's table entry, with the register tile the options give.
    CpuTuning tuning = cpuTuningFor(vectorBits);
    if (regRows > 0)
      tuning.regRows = regRows;
    if (regVectors > 0)
      tuning.regVectors = regVectors;
    SmallVector<memref::AllocOp> padded =
        padRightOperands(module, tuning.padRows, tuning.padMinRows);

    // The ops of each class, in walk order.
    std::map<Tiles, SmallVector<Operation *>> classes;
    module.walk([&](linalg::LinalgOp op) {
      std::optional<Tiles> t = tilesFor(op, vectorBits, tuning);
      if (!t)
        return;
      // A rank with no row-wise sequence in the library: Rows ops stay as
      // they are, split ops are not vectorised.
      if (t->rowRank && !library->lookupSymbol(rowsSequence(t->rowRank))) {
        if (t->kind == Tiles::Rows)
          return;
        t->rowRank = t->rowInner = 0;
      }
      classes[*t].push_back(op);
    });

    if (!classes.empty()) {
      SmallVector<Tiles> kinds;
      RaggedArray<transform::MappedValue> bindings;
      bindings.push_back(
          ArrayRef<transform::MappedValue>{module.getOperation()});
      for (auto &[t, ops] : classes) {
        kinds.push_back(t);
        bindings.push_back(llvm::map_range(
            ops, [](Operation *op) { return transform::MappedValue(op); }));
      }
      buildDriver(*library, kinds);
      buildLowerDriver(*library);
      if (failed(verify(*library))) {
        emitError(module.getLoc(),
                  "internal error: the codegen driver does not verify");
        return signalPassFailure();
      }
      auto entry = cast<transform::TransformOpInterface>(
          library->lookupSymbol(
              transform::TransformDialect::kTransformEntryPointSymbolName));
      if (failed(transform::applyTransformNamedSequence(
              std::move(bindings), entry, *library,
              transform::TransformOptions())))
        return signalPassFailure();
      // The accumulators into registers across K, through views (upstream
      // hoisting in @hkt_lower_vectors refuses those), then the lowering.
      hoistVectorAccumulators(module);
      if (failed(transform::applyTransformNamedSequence(
              module, library->lookupSymbol(kLowerEntry), *library,
              transform::TransformOptions())))
        return signalPassFailure();
      // The padded right operands in column panels, where the register
      // tiles' reads allow (RightOperandPanels.h).
      for (memref::AllocOp copy : padded)
        packRightOperandInPanels(copy);
    }

    // Sums along a vector (the softmax row sums) may be reassociated: a
    // tree of vector adds instead of one chain of scalar adds per lane
    // (LLVM keeps the order of a plain fadd reduction).
    module.walk([](vector::ReductionOp op) {
      if (op.getKind() == vector::CombiningKind::ADD &&
          isa<FloatType>(op.getType()))
        op.setFastmath(op.getFastmath() | arith::FastMathFlags::reassoc);
    });

    // The maxima reductions (a softmax's or a log-sum-exp's row maximum:
    // the attention's, the loss's): halvings of the vector by compare and
    // select (one vmaxps / vmaxss each: x86's max is exactly `a > b ? a : b`)
    // instead of maximumf's NaN-propagating reduction, which LLVM expands
    // to ~4 instructions a halving and a scalar chain at the end (~50 a
    // 64-wide row, ~10% of the f32 attention loop). A NaN among the scores
    // may be left out of the row's maximum; it still reaches the row's
    // output (or log-sum-exp) through exp(S - m) and the row sum, so that
    // is NaN either way. The carried value (the running maximum of the
    // earlier key tiles) is combined the same way: one vmaxss per row where
    // maximumf took ~10 scalar instructions (~2% of the attention loop).
    SmallVector<vector::ReductionOp> maxima;
    module.walk([&](vector::ReductionOp op) {
      if (op.getKind() == vector::CombiningKind::MAXIMUMF)
        maxima.push_back(op);
    });
    for (vector::ReductionOp op : maxima)
      reduceMaximumBySelects(op);

    // exp as a vectorised polynomial (error ~1e-7), not one expf call per
    // lane.
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return name == "exp" || name == "math.exp"; });
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
