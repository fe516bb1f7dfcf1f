//===- Random.h - splitmix64, the runtime's portable generator -*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Generated data (ListOps), initial weights and the training order must be
// the same wherever they are generated: the runtime uses its own generator
// and its own range reductions, never <random>'s distributions, whose
// outputs differ between standard libraries.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_RANDOM_H
#define HKT_RUNTIME_RANDOM_H

#include <cstdint>

namespace hkt::runtime {

/// The splitmix64 finalizer: a bijection of 64-bit words that mixes well.
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// splitmix64.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() { return mix64(state += 0x9e3779b97f4a7c15ULL); }
  /// Uniform in [0, n), n >= 1, without modulo bias.
  uint64_t below(uint64_t n) {
    uint64_t threshold = (0 - n) % n; // 2^64 mod n
    uint64_t x;
    do
      x = next();
    while (x < threshold);
    return x % n;
  }
  /// Uniform in [lo, hi], lo <= hi.
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
  }
  /// Uniform in (0, 1): 53 random bits, centred in their interval.
  double uniform() {
    return (static_cast<double>(next() >> 11) + 0.5) / 9007199254740992.0;
  }

private:
  uint64_t state;
};

} // namespace hkt::runtime

#endif // HKT_RUNTIME_RANDOM_H
