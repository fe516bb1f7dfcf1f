//===- SafeTensors.h - safetensors files ------------------------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Reads and writes the safetensors format
// (https://github.com/huggingface/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON describing each tensor (dtype, shape and
// data_offsets relative to the data buffer) plus optional "__metadata__", then
// the data buffer. Every field is validated before any data is read.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_SAFETENSORS_H
#define HKT_RUNTIME_SAFETENSORS_H

#include "runtime/Status.h"
#include "runtime/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace hkt::runtime {

/// Headers longer than this are refused as corrupt.
constexpr uint64_t kMaxSafeTensorsHeaderLength = 100 * 1000 * 1000;

/// A tensor and its name.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// The contents of a safetensors file.
struct SafeTensorsFile {
  /// The tensors, in the order of their data offsets.
  std::vector<NamedTensor> tensors;
  /// The optional "__metadata__" string map.
  std::map<std::string, std::string> metadata;

  /// The tensor called `name`, or null.
  const Tensor *find(const std::string &name) const;
};

/// Reads and validates a safetensors file.
Expected<SafeTensorsFile> readSafeTensors(const std::string &path);

/// Parses the `size` bytes at `data` as a safetensors file, with
/// readSafeTensors's checks and messages; `name` stands for the path in them.
Expected<SafeTensorsFile> parseSafeTensors(const void *data, size_t size,
                                           const std::string &name);

/// Writes tensors (names must be unique and not "__metadata__") and metadata
/// as a safetensors file, atomically (see writeFileAtomically). The data is
/// laid out in the order given, without gaps.
Status writeSafeTensors(
    const std::string &path,
    const std::vector<std::pair<std::string, const Tensor *>> &tensors,
    const std::map<std::string, std::string> &metadata = {});

} // namespace hkt::runtime

#endif // HKT_RUNTIME_SAFETENSORS_H
