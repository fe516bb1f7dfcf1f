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
#include "mlir/Parser/Parser.h"
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
  int64_t rows, cacheN, cacheK;
  bool operator<(const Tiles &o) const {
    return std::tie(rows, cacheN, cacheK) < std::tie(o.rows, o.cacheN, o.cacheK);
  }
};

/// Thread blocks of up to 64 rows, cache tiles of up to [256 (N), 512 (K)]
/// with the K loop outside N, an 8 x 32 register tile (16 zmm accumulators)
/// with K step 1; vectorise; lower the contraction to outer products and keep
/// the accumulator in registers across K (TOOLCHAIN.md's recipe).
std::string recipeFor(ArrayRef<std::pair<Tiles, int>> classes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "module attributes {transform.with_named_sequence} {\n"
        "transform.named_sequence @__transform_main(%root: !transform.any_op "
        "{transform.readonly}) {\n";
  for (auto [t, id] : classes) {
    os << llvm::formatv(
        "%mm{0} = transform.structured.match ops{{[\"linalg.matmul\"]} "
        "attributes {{hkt.codegen = {0} : i64} in %root : (!transform.any_op) "
        "-> !transform.any_op\n"
        "%a{0}, %f{0} = transform.structured.tile_using_forall %mm{0} "
        "tile_sizes [{1}, 0, 0] : (!transform.any_op) -> (!transform.any_op, "
        "!transform.any_op)\n"
        "%b{0}, %l{0}a, %l{0}b = transform.structured.tile_using_for %a{0} "
        "tile_sizes [0, {2}, {3}] interchange = [0, 2, 1] : "
        "(!transform.any_op) -> (!transform.any_op, !transform.any_op, "
        "!transform.any_op)\n"
        "%c{0}, %l{0}c, %l{0}d, %l{0}e = transform.structured.tile_using_for "
        "%b{0} tile_sizes [8, 32, 1] : (!transform.any_op) -> "
        "(!transform.any_op, !transform.any_op, !transform.any_op, "
        "!transform.any_op)\n"
        "transform.structured.vectorize %c{0} : !transform.any_op\n",
        id, t.rows, t.cacheN, t.cacheK);
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

/// The tiles for `mm`, if the recipe covers it: f32, static, outside any
/// loop, and the register tile divides every block.
std::optional<Tiles> tilesFor(linalg::MatmulOp mm) {
  if (!mm.hasPureBufferSemantics() || mm->getParentOfType<scf::ForallOp>() ||
      mm->getParentOfType<scf::ForOp>())
    return std::nullopt;
  auto a = dyn_cast<MemRefType>(mm.getDpsInputs()[0].getType());
  auto c = dyn_cast<MemRefType>(mm.getDpsInits()[0].getType());
  if (!a || !c || !a.hasStaticShape() || !c.hasStaticShape() ||
      !a.getElementType().isF32())
    return std::nullopt;
  int64_t m = c.getDimSize(0), n = c.getDimSize(1), k = a.getDimSize(1);
  Tiles t{std::gcd(m, int64_t(64)), std::gcd(n, int64_t(256)),
          std::gcd(k, int64_t(512))};
  if (t.rows % 8 != 0 || t.cacheN % 32 != 0)
    return std::nullopt;
  return t;
}

struct HktCpuCodegenPass
    : public mlir::hkt::impl::HktCpuCodegenPassBase<HktCpuCodegenPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::map<Tiles, int> classes;
    module.walk([&](linalg::MatmulOp mm) {
      if (std::optional<Tiles> t = tilesFor(mm)) {
        int id = classes.emplace(*t, classes.size()).first->second;
        mm->setAttr(kMarker, IntegerAttr::get(IntegerType::get(&getContext(), 64), id));
      }
    });
    if (classes.empty())
      return;
    SmallVector<std::pair<Tiles, int>> list(classes.begin(), classes.end());
    std::string text = recipeFor(list);
    OwningOpRef<ModuleOp> recipe =
        parseSourceString<ModuleOp>(text, ParserConfig(&getContext()));
    if (!recipe) {
      module.emitError("internal error: the codegen recipe does not parse");
      return signalPassFailure();
    }
    Operation *entry = recipe->lookupSymbol("__transform_main");
    if (failed(transform::applyTransformNamedSequence(
            module, entry, *recipe, transform::TransformOptions())))
      return signalPassFailure();
    module.walk([&](Operation *op) { op->removeAttr(kMarker); });
  }
};
} // namespace
