//===- manifest_fuzzer.cpp - Fuzz target for the manifest reader ----------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Any text must parse into a manifest or be refused with a message.
//
//===----------------------------------------------------------------------===//

#include "runtime/Manifest.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  hkt::runtime::Expected<hkt::runtime::Manifest> manifest =
      hkt::runtime::parseManifest(text, "fuzz/manifest.json");
  if (!manifest) {
    if (manifest.message().empty())
      std::abort();
    return 0;
  }
  // What the runtime prints about a module must work on any accepted one.
  (void)manifest->entryNames();
  return 0;
}
