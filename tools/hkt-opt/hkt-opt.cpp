//===- hkt-opt.cpp - MLIR optimizer driver with the hkt dialect -----------===//
//
// mlir-opt plus the hkt dialect, its passes and its named pipelines.
//
//===----------------------------------------------------------------------===//

#include "dialect/Register.h"
#include "passes/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::hkt::registerHktPassesAndPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::hkt::registerHktDialects(registry);
  mlir::hkt::registerHktExtensions(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "HKT optimizer driver\n", registry));
}
