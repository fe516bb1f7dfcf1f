//===- CpuCodegen.cpp - hkt-cpu-codegen -----------------------------------===//
//
// The matmul recipe of shared/TOOLCHAIN.md as a transform-dialect script,
// applied by the upstream transform interpreter to the matmuls it covers.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <numeric>

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTCPUCODEGENPASS
#include "passes/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {
constexpr llvm::StringLiteral kMarker = "hkt.codegen";

/// One class of matmuls: tiles that divide their shapes exactly, so every
/// tile is static (vectorisation needs static shapes).
struct Tiles {
  enum Kind {
    Gemm,      // a whole matmul: threads, cache tiles, register tiles
    TileGemm,  // a matmul inside a loop nest: register tiles only
    Rows,      // an elementwise or row-reduction op: one row at a time
    Whole,     // a 1-D op: vectorised as it is
    Split      // another op outside the loop nests: split across threads
               // along one parallel loop, then vectorised by rows when its
               // rows are contiguous
  } kind;
  int64_t rows = 0, cacheN = 0, cacheK = 0, regM = 0, regN = 0, regK = 1;
  std::vector<int64_t> threadSizes, rowSizes; // Split
  bool operator<(const Tiles &o) const {
    return std::tie(kind, rows, cacheN, cacheK, regM, regN, regK,
                    threadSizes, rowSizes) <
           std::tie(o.kind, o.rows, o.cacheN, o.cacheK, o.regM, o.regN,
                    o.regK, o.threadSizes, o.rowSizes);
  }
};

/// TOOLCHAIN.md's recipe, retuned on this machine (AVX2, no AVX-512):
/// thread blocks of up to 64 rows, cache tiles of up to [512 (N), 256 (K)]
/// with the K loop outside N, then register tiles (8 x 32 with AVX-512,
/// 4 x 16 with AVX2) visited column panel by column panel (the K x 16
/// panel of the right operand stays in L1 across the rows) with K steps of
/// 4; vectorise; lower the contraction to outer products. The accumulator
/// stays in registers across K where upstream hoisting applies, and is
/// otherwise loaded and stored once per 4 outer products (LLVM keeps it in
/// registers across the unrolled steps).
std::string recipeFor(ArrayRef<std::pair<Tiles, int>> classes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "module attributes {transform.with_named_sequence} {\n"
        "transform.named_sequence @__transform_main(%root: !transform.any_op "
        "{transform.readonly}) {\n";
  for (auto [t, id] : classes) {
    const char *ops = t.kind == Tiles::Gemm || t.kind == Tiles::TileGemm
                          ? "[\"linalg.matmul\"]"
                          : "[\"linalg.generic\", \"linalg.fill\", "
                            "\"linalg.copy\", \"linalg.transpose\"]";
    os << llvm::formatv("%m{0} = transform.structured.match ops{{{1}} "
                        "attributes {{hkt.codegen = {0} : i64} in %root : "
                        "(!transform.any_op) -> !transform.any_op\n",
                        id, ops);
    std::string target = llvm::formatv("%m{0}", id).str();
    if (t.kind == Tiles::Split) {
      std::string sizes;
      for (int64_t x : t.threadSizes)
        sizes += (sizes.empty() ? "" : ", ") + std::to_string(x);
      os << llvm::formatv(
          "%a{0}, %f{0} = transform.structured.tile_using_forall %m{0} "
          "tile_sizes [{1}] : (!transform.any_op) -> (!transform.any_op, "
          "!transform.any_op)\n",
          id, sizes);
      if (t.rowSizes.empty())
        continue;
      std::string rowSizes, loopTypes;
      for (int64_t x : t.rowSizes) {
        rowSizes += (rowSizes.empty() ? "" : ", ") + std::to_string(x);
        if (x)
          loopTypes += ", !transform.any_op";
      }
      os << llvm::formatv(
          "%c{0}, %l{0}c:{1} = transform.structured.tile_using_for %a{0} "
          "tile_sizes [{2}] : (!transform.any_op) -> (!transform.any_op{3})\n"
          "transform.structured.vectorize %c{0} : !transform.any_op\n",
          id, llvm::count_if(t.rowSizes, [](int64_t x) { return x != 0; }),
          rowSizes, loopTypes);
      continue;
    }
    if (t.kind == Tiles::Gemm) {
      os << llvm::formatv(
          "%a{0}, %f{0} = transform.structured.tile_using_forall %m{0} "
          "tile_sizes [{1}, 0, 0] : (!transform.any_op) -> "
          "(!transform.any_op, !transform.any_op)\n"
          "%b{0}, %l{0}a, %l{0}b = transform.structured.tile_using_for %a{0} "
          "tile_sizes [0, {2}, {3}] interchange = [0, 2, 1] : "
          "(!transform.any_op) -> (!transform.any_op, !transform.any_op, "
          "!transform.any_op)\n",
          id, t.rows, t.cacheN, t.cacheK);
      target = llvm::formatv("%b{0}", id).str();
    }
    if (t.kind == Tiles::Gemm || t.kind == Tiles::TileGemm) {
      os << llvm::formatv(
          "%c{0}, %l{0}c, %l{0}d, %l{0}e = transform.structured.tile_using_for "
          "{1} tile_sizes [{2}, {3}, {4}] {5} : (!transform.any_op) -> "
          "(!transform.any_op, !transform.any_op, !transform.any_op, "
          "!transform.any_op)\n",
          id, target, t.regM, t.regN, t.regK, t.kind == Tiles::Gemm ? "interchange = [1, 0, 2]" : "");
      target = llvm::formatv("%c{0}", id).str();
    } else if (t.kind == Tiles::Rows) {
      std::string sizes, loopTypes;
      for (int64_t i = 0; i < t.rows; ++i) {
        sizes += "1, ";
        loopTypes += ", !transform.any_op";
      }
      os << llvm::formatv(
          "%c{0}, %l{0}c:{1} = transform.structured.tile_using_for %m{0} "
          "tile_sizes [{2}0] : (!transform.any_op) -> (!transform.any_op{3})\n",
          id, t.rows, sizes, loopTypes);
      target = llvm::formatv("%c{0}", id).str();
    }
    os << "transform.structured.vectorize " << target
       << " : !transform.any_op\n";
  }
  os << R"mlir(
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.memref.fold_memref_alias_ops
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %f : !transform.any_op
    %h = transform.structured.hoist_redundant_vector_transfers %f : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %h {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
)mlir";
  return s;
}

bool staticF32(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  return t && t.hasStaticShape() && t.getElementType().isF32();
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

bool outerLoopsParallel(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> it = op.getIteratorTypesArray();
  return llvm::all_of(ArrayRef(it).drop_back(), [](utils::IteratorType t) {
    return t == utils::IteratorType::parallel;
  });
}

/// An op outside the loop nests (downsampling, the hybrid head, packing,
/// normalisation, fills): split across threads into 16 (or 8, 4, 2) equal
/// parts along its first parallel loop of at least 64 iterations; when its
/// rows are contiguous in every operand (elementwise ops, fills), each part
/// is vectorised row by row.
std::optional<Tiles> splitFor(linalg::LinalgOp op) {
  if (!isa<linalg::GenericOp, linalg::FillOp, linalg::CopyOp,
           linalg::TransposeOp>(op))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned p = 0; p < ranges.size(); ++p) {
    if (iterators[p] != utils::IteratorType::parallel ||
        ShapedType::isDynamic(ranges[p]) || ranges[p] < 64)
      continue;
    int64_t parts = 16;
    while (parts > 1 && ranges[p] % parts != 0)
      parts /= 2;
    if (parts == 1)
      return std::nullopt;
    Tiles t{Tiles::Split};
    t.threadSizes.assign(ranges.size(), 0);
    t.threadSizes[p] = ranges[p] / parts;
    // Rows contiguous in every operand: vectorised in pieces of up to 64.
    // Generics and fills only: the vector patterns loop forever on copies
    // into strided views and on transposes here (MLIR 22).
    if (p + 1 < ranges.size() && readsAlongInnermost(op) &&
        outerLoopsParallel(op) && isa<linalg::GenericOp, linalg::FillOp>(op)) {
      t.rowSizes.assign(ranges.size(), 1);
      t.rowSizes.back() = ranges.back() % 64 == 0 ? 64 : 0;
    }
    return t;
  }
  return std::nullopt;
}

/// How the recipe treats `op`, if it covers it: static f32 shapes whose
/// tiles divide exactly (vectorisation needs static shapes).
std::optional<Tiles> tilesFor(linalg::LinalgOp op, int64_t vectorBits) {
  if (!op.hasPureBufferSemantics() ||
      !llvm::all_of(op->getOperands(), [](Value v) {
        return !isa<MemRefType>(v.getType()) || staticF32(v);
      }))
    return std::nullopt;
  bool inLoop = op->getParentOfType<scf::ForallOp>() ||
                op->getParentOfType<scf::ForOp>();
  if (auto mm = dyn_cast<linalg::MatmulOp>(op.getOperation())) {
    auto a = cast<MemRefType>(mm.getDpsInputs()[0].getType());
    auto c = cast<MemRefType>(mm.getDpsInits()[0].getType());
    int64_t m = c.getDimSize(0), n = c.getDimSize(1), k = a.getDimSize(1);
    // Two vectors of columns by 8 rows (16 accumulators) with 32 vector
    // registers (AVX-512), by 4 rows (8 accumulators) with 16 (AVX2).
    Tiles t{inLoop ? Tiles::TileGemm : Tiles::Gemm};
    int64_t lanes = std::max<int64_t>(vectorBits / 32, 1);
    t.regM = vectorBits >= 512 ? 8 : 4;
    t.regN = n % (2 * lanes) == 0 ? 2 * lanes : n % lanes == 0 ? lanes : 0;
    if (m % t.regM != 0 || t.regN == 0)
      return std::nullopt;
    // K steps of 4 per register tile: the accumulator is loaded and stored
    // once per 4 outer products instead of every one (measured on this
    // machine: 1 -> 4 took a 4096 x 512 x 512 projection from ~60 to ~125
    // GFLOP/s; 8 and 16 were slower again).
    t.regK = std::gcd(k, int64_t(4));
    if (!inLoop) {
      t.rows = std::gcd(m, int64_t(64));
      if (t.rows % t.regM != 0)
        return std::nullopt;
      t.cacheN = std::gcd(n, int64_t(512));
      t.cacheK = std::gcd(k, int64_t(256));
      if (t.cacheN % t.regN != 0)
        return std::nullopt;
    }
    return t;
  }
  if (!inLoop)
    return splitFor(op);
  // The small ops of the attention tiles (inside the loop nest).
  if (!isa<linalg::GenericOp, linalg::FillOp, linalg::CopyOp>(op))
    return std::nullopt;
  if (op.getNumLoops() == 1)
    return Tiles{Tiles::Whole};
  // Beyond 2-D, only ops that read and write every operand along the
  // innermost loop: the strided 4-D broadcast of a coarse level block
  // (keys in order) sends the vector patterns below into an endless
  // rewrite loop (seen with MLIR 22), so it stays as loops.
  unsigned loops = op.getNumLoops();
  if ((loops > 2 && !readsAlongInnermost(op)) || !outerLoopsParallel(op))
    return std::nullopt;
  Tiles t{Tiles::Rows};
  t.rows = loops - 1; // every loop but the innermost, by 1
  return t;
}

/// Runs the recipe on the ops marked with their class.
LogicalResult applyRecipe(ModuleOp module,
                          const std::map<Tiles, int> &classes) {
  SmallVector<std::pair<Tiles, int>> list(classes.begin(), classes.end());
  OwningOpRef<ModuleOp> recipe = parseSourceString<ModuleOp>(
      recipeFor(list), ParserConfig(module.getContext()));
  if (!recipe)
    return module.emitError("internal error: the codegen recipe does not parse");
  Operation *entry = recipe->lookupSymbol("__transform_main");
  return transform::applyTransformNamedSequence(module, entry, *recipe,
                                                transform::TransformOptions());
}

struct HktCpuCodegenPass
    : public mlir::hkt::impl::HktCpuCodegenPassBase<HktCpuCodegenPass> {
  using HktCpuCodegenPassBase::HktCpuCodegenPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::map<Tiles, int> classes;
    Type i64 = IntegerType::get(&getContext(), 64);
    module.walk([&](linalg::LinalgOp op) {
      if (std::optional<Tiles> t = tilesFor(op, vectorBits)) {
        int id = classes.emplace(*t, classes.size()).first->second;
        op->setAttr(kMarker, IntegerAttr::get(i64, id));
      }
    });
    if (!classes.empty() && failed(applyRecipe(module, classes)))
      return signalPassFailure();
    module.walk([&](Operation *op) { op->removeAttr(kMarker); });

    // Sums along a vector (the softmax row sums) may be reassociated: a
    // tree of vector adds instead of one chain of scalar adds per lane
    // (LLVM keeps the order of a plain fadd reduction).
    module.walk([](vector::ReductionOp op) {
      if (op.getKind() == vector::CombiningKind::ADD &&
          isa<FloatType>(op.getType()))
        op.setFastmath(op.getFastmath() | arith::FastMathFlags::reassoc);
    });

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
