//===- npy_fuzzer.cpp - Fuzz target for the .npy reader -------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Any bytes must be read into a tensor or refused with a message; never a
// crash, a hang or an allocation the bytes do not pay for.
//
//===----------------------------------------------------------------------===//

#include "runtime/Npy.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hkt::runtime::Expected<hkt::runtime::Tensor> tensor =
      hkt::runtime::parseNpy(data, size, "fuzz.npy");
  // A refusal must say something; a tensor must be exactly what the data
  // holds.
  if (!tensor && tensor.message().empty())
    std::abort();
  if (tensor && tensor->byteSize() > size)
    std::abort();
  return 0;
}
