//===- Tensor.cpp - Dense host tensors for the HKT runtime ----------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/Tensor.h"
#include "runtime/Internal.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

using namespace hkt::runtime;
using namespace hkt::runtime::detail;

const char *hkt::runtime::dtypeName(DType type) {
  switch (type) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "?";
}

const char *hkt::runtime::dtypeNumpyCode(DType type) {
  switch (type) {
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  }
  return "?";
}

const char *hkt::runtime::dtypeSafeTensorsName(DType type) {
  switch (type) {
  case DType::F32:
    return "F32";
  case DType::F64:
    return "F64";
  case DType::I32:
    return "I32";
  case DType::I64:
    return "I64";
  }
  return "?";
}

size_t hkt::runtime::dtypeSize(DType type) {
  switch (type) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  }
  return 0;
}

bool hkt::runtime::isIntegerDType(DType type) {
  return type == DType::I32 || type == DType::I64;
}

std::optional<DType> hkt::runtime::parseDTypeName(std::string_view name) {
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64})
    if (name == dtypeName(t))
      return t;
  return std::nullopt;
}

std::string hkt::runtime::formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::optional<int64_t>
hkt::runtime::checkedNumElements(const std::vector<int64_t> &shape,
                                 size_t elementSize) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return std::nullopt;
    n *= d;
  }
  if (elementSize && n > std::numeric_limits<int64_t>::max() /
                             static_cast<int64_t>(elementSize))
    return std::nullopt;
  return n;
}

void Tensor::FreeDeleter::operator()(void *p) const {
  if (owns)
    std::free(p);
}

Expected<Tensor> Tensor::borrow(DType type, std::vector<int64_t> shape,
                                void *data) {
  std::optional<int64_t> numel = checkedNumElements(shape, dtypeSize(type));
  if (!numel)
    return Status::error(concat("invalid tensor shape ", formatShape(shape),
                                " for ", dtypeName(type)));
  if (!data && *numel > 0)
    return Status::error(concat("a ", dtypeName(type), " ", formatShape(shape),
                                " tensor has no data"));
  Tensor t;
  t.type = type;
  t.dims = std::move(shape);
  t.numel = *numel;
  // Compiled code gets a non-null pointer even for an empty tensor.
  static char emptyBuffer[kTensorAlignment];
  t.buffer = std::unique_ptr<void, FreeDeleter>(data ? data : emptyBuffer,
                                                FreeDeleter{false});
  return t;
}

Expected<Tensor> Tensor::allocate(DType type, std::vector<int64_t> shape) {
  std::optional<int64_t> numel = checkedNumElements(shape, dtypeSize(type));
  if (!numel)
    return Status::error(concat("invalid tensor shape ", formatShape(shape),
                                " for ", dtypeName(type)));
  size_t bytes = static_cast<size_t>(*numel) * dtypeSize(type);
  // aligned_alloc wants a size that is a multiple of the alignment; zero-sized
  // tensors still get a real (non-null) buffer to hand to compiled code.
  size_t rounded =
      (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (rounded < bytes)
    return Status::error(concat("tensor of ", bytes, " bytes is too large"));
  if (rounded == 0)
    rounded = kTensorAlignment;
  void *p = std::aligned_alloc(kTensorAlignment, rounded);
  if (!p)
    return Status::error(concat("out of memory allocating ", bytes,
                                " bytes for a ", dtypeName(type), " ",
                                formatShape(shape), " tensor"));
  std::memset(p, 0, rounded);
  Tensor t;
  t.type = type;
  t.dims = std::move(shape);
  t.numel = *numel;
  t.buffer.reset(p);
  return t;
}

std::vector<int64_t> Tensor::strides() const {
  std::vector<int64_t> s(dims.size());
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = stride;
    stride *= dims[i];
  }
  return s;
}

std::string Tensor::describe() const {
  return std::string(dtypeName(type)) + " " + formatShape(dims);
}

double Tensor::elementAsDouble(int64_t i) const {
  switch (type) {
  case DType::F32:
    return dataAs<float>()[i];
  case DType::F64:
    return dataAs<double>()[i];
  case DType::I32:
    return dataAs<int32_t>()[i];
  case DType::I64:
    return static_cast<double>(dataAs<int64_t>()[i]);
  }
  return 0;
}

int64_t Tensor::elementAsInt(int64_t i) const {
  switch (type) {
  case DType::I32:
    return dataAs<int32_t>()[i];
  case DType::I64:
    return dataAs<int64_t>()[i];
  case DType::F32:
  case DType::F64:
    return static_cast<int64_t>(elementAsDouble(i));
  }
  return 0;
}

void hkt::runtime::fillConstant(Tensor &tensor, double value) {
  int64_t n = tensor.numElements();
  switch (tensor.dtype()) {
  case DType::F32:
    std::fill_n(tensor.dataAs<float>(), n, static_cast<float>(value));
    break;
  case DType::F64:
    std::fill_n(tensor.dataAs<double>(), n, value);
    break;
  case DType::I32:
    std::fill_n(tensor.dataAs<int32_t>(), n, static_cast<int32_t>(value));
    break;
  case DType::I64:
    std::fill_n(tensor.dataAs<int64_t>(), n, static_cast<int64_t>(value));
    break;
  }
}

void hkt::runtime::fillConstantInt(Tensor &tensor, int64_t value) {
  int64_t n = tensor.numElements();
  switch (tensor.dtype()) {
  case DType::I32:
    std::fill_n(tensor.dataAs<int32_t>(), n, static_cast<int32_t>(value));
    break;
  case DType::I64:
    std::fill_n(tensor.dataAs<int64_t>(), n, value);
    break;
  case DType::F32:
  case DType::F64:
    fillConstant(tensor, static_cast<double>(value));
    break;
  }
}

namespace {
/// SplitMix64: tiny, fast and fully specified, so random inputs are the same
/// on every platform (unlike the <random> distributions).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, span) without modulo bias; span == 0 means 2^64.
  uint64_t below(uint64_t span) {
    if (span == 0)
      return next();
    uint64_t limit = std::numeric_limits<uint64_t>::max() -
                     std::numeric_limits<uint64_t>::max() % span;
    uint64_t x;
    do
      x = next();
    while (x >= limit);
    return x % span;
  }
};

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001b3ULL;
  return h;
}
} // namespace

void hkt::runtime::fillRandom(
    Tensor &tensor, uint64_t seed, std::string_view stream,
    std::optional<std::pair<int64_t, int64_t>> range) {
  SplitMix64 rng{seed ^ fnv1a(stream)};
  rng.next(); // decorrelate nearby seeds
  int64_t n = tensor.numElements();
  // Floats use exactly as many random bits as the mantissa holds, so the
  // value is exact and never rounds up to +0.5.
  switch (tensor.dtype()) {
  case DType::F32: {
    float *p = tensor.dataAs<float>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = static_cast<float>(rng.next() >> 40) * 0x1p-24f - 0.5f;
    return;
  }
  case DType::F64: {
    double *p = tensor.dataAs<double>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = static_cast<double>(rng.next() >> 11) * 0x1p-53 - 0.5;
    return;
  }
  case DType::I32:
  case DType::I64: {
    int64_t lo = range ? range->first : 0, hi = range ? range->second : 9;
    uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
    for (int64_t i = 0; i < n; ++i) {
      int64_t v =
          static_cast<int64_t>(static_cast<uint64_t>(lo) + rng.below(span));
      if (tensor.dtype() == DType::I32)
        tensor.dataAs<int32_t>()[i] = static_cast<int32_t>(v);
      else
        tensor.dataAs<int64_t>()[i] = v;
    }
    return;
  }
  }
}
