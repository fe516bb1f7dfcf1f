//===- model_config_fuzzer.cpp - Fuzz target for model configs ------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Any text must be refused with a message by parseModelConfig, or give a
// config whose model module (batch 1) builds and verifies: a config inside
// the limits that does not is a bug in the limits or in the builder. The
// build does not grow with the shapes (one op per layer step).
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/ModelConfig.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef json(reinterpret_cast<const char *>(data), size);
  llvm::Expected<hkt::ModelConfig> config = hkt::parseModelConfig(json);
  if (!config) {
    if (llvm::toString(config.takeError()).empty())
      std::abort();
    return 0;
  }
  // Many layers build many ops: keep each input's work bounded.
  if (config->layers > 8)
    return 0;
  static MLIRContext *context = [] {
    auto *ctx = new MLIRContext(MLIRContext::Threading::DISABLED);
    ctx->getDiagEngine().registerHandler(
        [](Diagnostic &) { return success(); });
    return ctx;
  }();
  OwningOpRef<ModuleOp> module = hkt::buildModelModule(
      *context, *config, 1, /*dynamicLength=*/true, UnknownLoc::get(context));
  if (!module || failed(verify(*module)))
    std::abort();
  return 0;
}
