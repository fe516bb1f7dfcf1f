//===- Tensor.h - Dense host tensors for the HKT runtime --------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// A Tensor owns a 64-byte-aligned, zero-initialised, C-order (row-major)
// buffer of one of the element types the compiled-module format knows.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_TENSOR_H
#define HKT_RUNTIME_TENSOR_H

#include "runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hkt::runtime {

/// Element types. The manifest spells them "f32", "f64", "i32", "i64".
enum class DType { F32, F64, I32, I64 };

/// The manifest name of a dtype: "f32", "f64", "i32" or "i64".
const char *dtypeName(DType type);
/// The numpy `descr` of a dtype: "<f4", "<f8", "<i4" or "<i8".
const char *dtypeNumpyCode(DType type);
/// The safetensors name of a dtype: "F32", "F64", "I32" or "I64".
const char *dtypeSafeTensorsName(DType type);
/// Bytes per element.
size_t dtypeSize(DType type);
/// True for the integer dtypes.
bool isIntegerDType(DType type);
/// Parses a manifest dtype name; std::nullopt if unknown.
std::optional<DType> parseDTypeName(std::string_view name);

/// Formats a shape as in messages: "[2,64,32]" ("[]" for a scalar).
std::string formatShape(const std::vector<int64_t> &shape);

/// Number of elements of a shape, or std::nullopt when a dimension is
/// negative or the product (or its size in bytes for `elementSize`)
/// overflows.
std::optional<int64_t> checkedNumElements(const std::vector<int64_t> &shape,
                                          size_t elementSize);

/// Buffers are aligned to this many bytes (a cache line; what the compiled
/// code's vector loads assume).
constexpr size_t kTensorAlignment = 64;

/// A dense tensor that owns its buffer, or borrows a caller's (borrow).
class Tensor {
public:
  /// An empty f32 tensor of shape [0] with no buffer.
  Tensor() = default;

  /// Allocates a zero-filled tensor. Fails on a negative dimension, on an
  /// overflowing size and when memory runs out.
  static Expected<Tensor> allocate(DType type, std::vector<int64_t> shape);
  /// A tensor over `data`, which the caller owns and keeps alive (a dense
  /// row-major buffer of the shape's bytes; any alignment): the C API's
  /// zero-copy view of a caller's array. Fails on a negative dimension, an
  /// overflowing size, or null data for a non-empty shape.
  static Expected<Tensor> borrow(DType type, std::vector<int64_t> shape,
                                 void *data);

  DType dtype() const { return type; }
  const std::vector<int64_t> &shape() const { return dims; }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t numElements() const { return numel; }
  size_t byteSize() const {
    return static_cast<size_t>(numel) * dtypeSize(type);
  }

  /// The buffer: 64-byte aligned; never null for an allocated tensor (even
  /// one with zero elements), null only for a default-constructed one.
  void *data() { return buffer.get(); }
  const void *data() const { return buffer.get(); }
  template <typename T> T *dataAs() { return static_cast<T *>(data()); }
  template <typename T> const T *dataAs() const {
    return static_cast<const T *>(data());
  }

  /// Row-major strides in elements.
  std::vector<int64_t> strides() const;

  /// "f32 [2,64,32]".
  std::string describe() const;

  /// The element at flat index `i` widened to double / int64_t (for
  /// messages and checks; integers wider than 2^53 lose precision as double).
  double elementAsDouble(int64_t i) const;
  int64_t elementAsInt(int64_t i) const;

private:
  struct FreeDeleter {
    /// `owns` is false for a borrowed buffer.
    FreeDeleter() : owns(true) {}
    explicit FreeDeleter(bool owns) : owns(owns) {}
    bool owns;
    void operator()(void *p) const;
  };

  DType type = DType::F32;
  std::vector<int64_t> dims{0};
  int64_t numel = 0;
  std::unique_ptr<void, FreeDeleter> buffer;
};

/// Sets every element to `value` (converted to the tensor's dtype).
void fillConstant(Tensor &tensor, double value);
/// Sets every element of an integer tensor to `value`.
void fillConstantInt(Tensor &tensor, int64_t value);

/// Fills a tensor with deterministic pseudo-random values derived from `seed`
/// and `stream` (e.g. the argument's name, so that values do not depend on
/// the order in which arguments are filled). Floats are uniform in
/// [-0.5, 0.5); integers uniform in [lo, hi] (inclusive) when `range` is
/// given, else in [0, 10). The sequence is the same on every platform.
void fillRandom(
    Tensor &tensor, uint64_t seed, std::string_view stream,
    std::optional<std::pair<int64_t, int64_t>> range = std::nullopt);

} // namespace hkt::runtime

#endif // HKT_RUNTIME_TENSOR_H
