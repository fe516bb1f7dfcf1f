//===- ConvertMpiToLLVM.cpp - mpi -> calls of Open MPI --------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// hkt-convert-mpi-to-llvm (Passes.td): upstream's MPI -> LLVM patterns, then
// the names Open MPI 4 exports for the predefined reduction operations.
//
//===----------------------------------------------------------------------===//

#include "passes/distributed/Passes.h"

#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MPIToLLVM/MPIToLLVM.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTCONVERTMPITOLLVMPASS
#include "passes/distributed/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {

/// The module attribute and key that choose the MPI ABI
/// (mpi::populateMPIToLLVMConversionPatterns reads them).
constexpr const char *kMpiDlti = "mpi.dlti";
constexpr const char *kMpiImpl = "MPI:Implementation";

/// MLIR 22 names Open MPI's predefined operations `ompi_mpi_<op>`; Open MPI
/// 4's mpi.h takes the address of `ompi_mpi_op_<op>` (MPI_SUM is
/// `&ompi_mpi_op_sum`), the only one its library exports.
LogicalResult renameOpenMpiOperations(ModuleOp module) {
  // (MPI_OP_NULL and MPI_NO_OP are left alone: MLIR 22 gives both the one
  // name `ompi_mpi_no_op`, and no collective here uses either.)
  static constexpr const char *kOps[] = {
      "max", "min",  "sum",  "prod",   "land",   "band",   "lor",
      "bor", "lxor", "bxor", "maxloc", "minloc", "replace"};
  for (const char *op : kOps) {
    std::string upstream = std::string("ompi_mpi_") + op;
    auto global = module.lookupSymbol<LLVM::GlobalOp>(upstream);
    if (!global)
      continue;
    std::string openMpi = std::string("ompi_mpi_op_") + op;
    if (module.lookupSymbol(openMpi))
      return global.emitError("hkt-convert-mpi-to-llvm: both '")
             << upstream << "' and '" << openMpi << "' are defined";
    if (failed(SymbolTable::replaceAllSymbolUses(
            global, StringAttr::get(module.getContext(), openMpi), module)))
      return failure();
    SymbolTable::setSymbolName(global, openMpi);
  }
  return success();
}

struct HktConvertMpiToLLVMPass
    : hkt::impl::HktConvertMpiToLLVMPassBase<HktConvertMpiToLLVMPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool hasMpi = false;
    module.walk([&](Operation *op) {
      if (isa<mpi::MPIDialect>(op->getDialect())) {
        hasMpi = true;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (!hasMpi)
      return;
    MLIRContext *ctx = &getContext();
    // The runtime loads Open MPI (docs/training.md); a module that names
    // another implementation keeps it (and the manifest says which).
    if (!module->hasAttr(kMpiDlti))
      module->setAttr(kMpiDlti,
                      MapAttr::get(ctx, {DataLayoutEntryAttr::get(
                                            StringAttr::get(ctx, kMpiImpl),
                                            StringAttr::get(ctx, "OpenMPI"))}));
    LLVMTypeConverter converter(ctx);
    RewritePatternSet patterns(ctx);
    mpi::populateMPIToLLVMConversionPatterns(converter, patterns);
    LLVMConversionTarget target(*ctx);
    target.addIllegalDialect<mpi::MPIDialect>();
    if (failed(applyPartialConversion(module, target, std::move(patterns))) ||
        failed(renameOpenMpiOperations(module)))
      signalPassFailure();
  }
};

} // namespace
