//===- TestUtil.h - Helpers for the runtime unit tests ----------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_TEST_UNIT_TESTUTIL_H
#define HKT_TEST_UNIT_TESTUTIL_H

#include "runtime/Tensor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hkt::test {

/// A fixture that gives each test a fresh temporary directory, removed after.
class TempDirTest : public ::testing::Test {
protected:
  void SetUp() override;
  void TearDown() override;
  /// `name` inside the temporary directory.
  std::string path(const std::string &name) const { return dir + "/" + name; }

  std::string dir;
};

/// Writes `bytes` to `path` (failing the test on error).
void writeBytes(const std::string &path, const std::string &bytes);
/// Reads a whole file ("" if it cannot be read).
std::string readBytes(const std::string &path);
bool fileExists(const std::string &path);

/// A .npy file's bytes: magic, version major.0, the header length field
/// (2 bytes for version 1, 4 otherwise) and `header` as given (not padded),
/// then `data`.
std::string npyBytes(int major, const std::string &header,
                     const std::string &data);
/// A safetensors file's bytes: the 8-byte length of `header`, `header`, `data`.
std::string safetensorsBytes(const std::string &header,
                             const std::string &data);
/// The raw bytes of floats / int32s.
std::string floatBytes(const std::vector<float> &values);
std::string int32Bytes(const std::vector<int32_t> &values);

/// A tensor holding `values` (which must fill `shape`).
runtime::Tensor makeF32(std::vector<int64_t> shape,
                        const std::vector<float> &values);
runtime::Tensor makeI32(std::vector<int64_t> shape,
                        const std::vector<int32_t> &values);
/// The elements of an f32 tensor.
std::vector<float> valuesF32(const runtime::Tensor &t);

/// Asserts that `message` contains `part`.
::testing::AssertionResult mentions(const std::string &message,
                                    const std::string &part);

/// Writes the tiny test module into `dir`: module.so compiled with `cc` from
/// C code exporting _hkt_packed_add (z = x + y, f32[4]), _hkt_packed_masked
/// (z = keep ? x + y : 0, with keep an i32[4] defaulting to 1 in [0, 1]),
/// _hkt_packed_sum (a rank-0 result), _hkt_packed_step (p, in-out, -= 0.5 g;
/// s = sum of the new p), _hkt_packed_twice (y = 2 x for x of shape
/// [B<=8, 2], B dynamic) and _hkt_packed_probe (reports the descriptor it
/// receives for an f32[2,3]). `entries` selects which the manifest (format
/// version 2) lists. Returns false with `why` set when no C compiler is
/// found.
bool buildTinyModule(const std::string &dir, std::string &why,
                     const std::vector<std::string> &entries = {
                         "add", "masked", "sum", "probe"});
/// The manifest text of the tiny module for `entries`, with `features` as its
/// target features and `triple` as its triple.
std::string
tinyManifest(const std::vector<std::string> &entries,
             const std::vector<std::string> &features = {"sse2"},
             const std::string &triple = "x86_64-unknown-linux-gnu");

/// Skips the test if the tiny module cannot be built.
#define HKT_BUILD_TINY_MODULE_OR_SKIP(dir, ...)                                \
  do {                                                                         \
    std::string hktWhy;                                                        \
    if (!::hkt::test::buildTinyModule(dir, hktWhy, ##__VA_ARGS__)) {           \
      if (hktWhy.empty())                                                      \
        GTEST_SKIP() << "no C compiler (cc) found to build the test module";   \
      FAIL() << hktWhy;                                                        \
    }                                                                          \
  } while (0)

} // namespace hkt::test

#endif // HKT_TEST_UNIT_TESTUTIL_H
