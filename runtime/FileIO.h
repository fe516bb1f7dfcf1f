//===- FileIO.h - File helpers for the HKT runtime --------------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_FILEIO_H
#define HKT_RUNTIME_FILEIO_H

#include "runtime/Status.h"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace hkt::runtime {

/// A byte range to write: pointer and size.
using ByteSpan = std::pair<const void *, size_t>;

/// Writes the concatenation of `pieces` to `path` atomically: the bytes go to
/// a temporary file in the same directory which is renamed over `path` only
/// once complete, so a failure never leaves a half-written file nor clobbers
/// an existing one. The new file gets the usual 0666 & ~umask permissions.
Status writeFileAtomically(const std::string &path,
                           const std::vector<ByteSpan> &pieces);

/// Reads a whole (small) file such as a manifest.
Expected<std::string> readTextFile(const std::string &path);

} // namespace hkt::runtime

#endif // HKT_RUNTIME_FILEIO_H
