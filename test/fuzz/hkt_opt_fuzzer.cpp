//===- hkt_opt_fuzzer.cpp - Fuzz target for hkt-opt's parse + verify ------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Any text must parse and verify, or be refused with diagnostics, in a
// context with the dialects hkt-opt registers. Only our code is instrumented
// (libMLIR.so is not): coverage feedback comes from the hkt dialect's
// parsers and verifiers, while crashes anywhere are still caught.
//
//===----------------------------------------------------------------------===//

#include "dialect/Register.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;

static const DialectRegistry &registry() {
  static DialectRegistry *r = [] {
    auto *reg = new DialectRegistry();
    registerAllDialects(*reg);
    registerAllExtensions(*reg);
    hkt::registerHktDialects(*reg);
    hkt::registerHktExtensions(*reg);
    return reg;
  }();
  return *r;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // MLIR's lexer reads its buffer up to a terminating NUL, as every file
  // hkt-opt reads has (llvm::MemoryBuffer); libFuzzer's data has none (the
  // first run read past its end), so the text is copied into a std::string.
  std::string text(reinterpret_cast<const char *>(data), size);
  // A fresh context per input, so that one input's uniqued types and
  // attributes do not pile up over millions of runs.
  MLIRContext context(registry(), MLIRContext::Threading::DISABLED);
  context.getDiagEngine().registerHandler(
      [](Diagnostic &) { return success(); });
  ParserConfig config(&context, /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, config);
  if (module)
    (void)verify(*module);
  return 0;
}
