//===- safetensors_fuzzer.cpp - Fuzz target for the safetensors reader ----===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Any bytes must be read into named tensors or refused with a message.
//
//===----------------------------------------------------------------------===//

#include "runtime/SafeTensors.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hkt::runtime::Expected<hkt::runtime::SafeTensorsFile> file =
      hkt::runtime::parseSafeTensors(data, size, "fuzz.safetensors");
  if (!file) {
    if (file.message().empty())
      std::abort();
    return 0;
  }
  // The tensors were copied out of the data buffer, without overlaps.
  uint64_t total = 0;
  for (const hkt::runtime::NamedTensor &t : file->tensors) {
    total += t.tensor.byteSize();
    if (file->find(t.name) == nullptr)
      std::abort();
  }
  if (total > size)
    std::abort();
  return 0;
}
