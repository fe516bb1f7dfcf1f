//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Reads and writes the NumPy .npy format
// (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
// format versions 1.0, 2.0 and 3.0, little-endian, C order, dtypes <f4, <f8,
// <i4 and <i8. Anything else is refused with a message naming the file and
// the problem rather than guessed at.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_NPY_H
#define HKT_RUNTIME_NPY_H

#include "runtime/Status.h"
#include "runtime/Tensor.h"

#include <string>

namespace hkt::runtime {

/// Headers longer than this are refused as corrupt (numpy's own limit for
/// untrusted files is 10000 bytes).
constexpr uint64_t kMaxNpyHeaderLength = 1 << 20;

/// Reads a .npy file into a new tensor.
Expected<Tensor> readNpy(const std::string &path);

/// Parses the `size` bytes at `data` as a .npy file, with readNpy's checks
/// and messages; `name` stands for the path in them.
Expected<Tensor> parseNpy(const void *data, size_t size,
                          const std::string &name);

/// Writes `tensor` as a .npy file (format 1.0, or 2.0 if the header needs
/// it), atomically: see writeFileAtomically.
Status writeNpy(const std::string &path, const Tensor &tensor);

} // namespace hkt::runtime

#endif // HKT_RUNTIME_NPY_H
