//===- layer_config_fuzzer.cpp - Fuzz target for layer configs ------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Any text must be refused with a message by parseLayerConfig or
// checkLayerConfigLimits, or give a config whose layer module builds and
// verifies (one hkt.attention op: the build does not grow with the shapes).
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/LayerConfig.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef json(reinterpret_cast<const char *>(data), size);
  llvm::Expected<hkt::LayerConfig> config = hkt::parseLayerConfig(json);
  if (!config) {
    llvm::consumeError(config.takeError());
    return 0;
  }
  if (llvm::Error error = hkt::checkLayerConfigLimits(*config)) {
    llvm::consumeError(std::move(error));
    return 0;
  }
  // One context for all inputs: creating one per input would dominate the
  // run time.
  static MLIRContext *context = [] {
    auto *ctx = new MLIRContext(MLIRContext::Threading::DISABLED);
    ctx->getDiagEngine().registerHandler(
        [](Diagnostic &) { return success(); });
    return ctx;
  }();
  OwningOpRef<ModuleOp> module =
      hkt::buildLayerModule(*context, *config, UnknownLoc::get(context));
  // A config within the limits must give a module that verifies: anything
  // else is a bug in the limits or in the builder.
  if (!module || failed(verify(*module)))
    std::abort();
  return 0;
}
