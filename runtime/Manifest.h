//===- Manifest.h - The compiled module's manifest.json ---------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The manifest describes a compiled module: its shared object, the target it
// was compiled for and its entry points with their arguments and results.
// The schema is docs/module-format.md; anything the runtime does not
// understand (an unknown format, a newer version, an unknown dtype, a dynamic
// dimension) is refused with a message naming the field, never guessed at.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_MANIFEST_H
#define HKT_RUNTIME_MANIFEST_H

#include "runtime/Status.h"
#include "runtime/Tensor.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hkt::runtime {

/// The manifest format version this runtime reads.
constexpr int64_t kManifestVersion = 1;

/// A scalar from the manifest (an argument's `default`).
struct Scalar {
  bool isInteger = false;
  int64_t intValue = 0;  ///< Valid when isInteger.
  double floatValue = 0; ///< Always valid (rounded for large integers).
  std::string str() const;
};

/// One argument or result of an entry.
struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// Arguments only: the value an unbound argument is filled with.
  std::optional<Scalar> defaultValue;
  /// Arguments of integer dtype only: allowed values [lo, hi], inclusive.
  std::optional<std::pair<int64_t, int64_t>> range;

  /// "f32 [2,64,32]".
  std::string describe() const;
};

/// One entry point: `void symbol(void **args)`.
struct EntrySpec {
  std::string name;
  std::string symbol;
  std::vector<TensorSpec> args;
  std::vector<TensorSpec> results;

  /// The argument / result called `name`, or null.
  const TensorSpec *findArg(const std::string &name) const;
  const TensorSpec *findResult(const std::string &name) const;
};

/// What the code was compiled for.
struct TargetSpec {
  std::string triple;
  std::string cpu;
  /// LLVM feature names, without a leading '+' (features the manifest lists
  /// as disabled, with a leading '-', are dropped).
  std::vector<std::string> features;
};

/// A parsed manifest.json.
struct Manifest {
  int64_t version = kManifestVersion;
  /// The shared object's file name, relative to the module directory.
  std::string library;
  TargetSpec target;
  std::vector<EntrySpec> entries;

  /// The entry called `name`, or null.
  const EntrySpec *findEntry(const std::string &name) const;
  /// "'a', 'b'": the entry names, for messages.
  std::string entryNames() const;
};

/// Parses manifest text; `source` names it in messages (e.g. its path).
Expected<Manifest> parseManifest(const std::string &text,
                                 const std::string &source);

/// Reads and parses a manifest file.
Expected<Manifest> readManifest(const std::string &path);

} // namespace hkt::runtime

#endif // HKT_RUNTIME_MANIFEST_H
