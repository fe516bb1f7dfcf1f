//===- NpyTest.cpp - Tests of the .npy reader and writer ------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/Npy.h"
#include "test/Unit/TestUtil.h"

#include <cstring>
#include <filesystem>

using namespace hkt::runtime;
using namespace hkt::test;

namespace {

class NpyTest : public TempDirTest {
protected:
  /// Writes `bytes` to a file and reads it back as .npy; returns the error.
  std::string readError(const std::string &bytes) {
    std::string file = path("bad.npy");
    writeBytes(file, bytes);
    Expected<Tensor> t = readNpy(file);
    EXPECT_FALSE(t.ok()) << "the file was accepted";
    if (!t.ok()) {
      EXPECT_TRUE(mentions(t.message(), file))
          << "the message must name the file";
    }
    return t.message();
  }
  static std::string header(const std::string &descr, const std::string &shape,
                            const std::string &fortran = "False") {
    return "{'descr': '" + descr + "', 'fortran_order': " + fortran +
           ", 'shape': " + shape + ", }\n";
  }
};

class NpyDTypeTest : public TempDirTest,
                     public ::testing::WithParamInterface<DType> {};

TEST_P(NpyDTypeTest, RoundTrip) {
  DType type = GetParam();
  auto t = Tensor::allocate(type, {2, 3});
  ASSERT_TRUE(t.ok()) << t.message();
  for (int64_t i = 0; i < 6; ++i) {
    switch (type) {
    case DType::F32:
      t->dataAs<float>()[i] = 0.25f * i - 1;
      break;
    case DType::F64:
      t->dataAs<double>()[i] = 1e300 * (i - 3);
      break;
    case DType::I32:
      t->dataAs<int32_t>()[i] = -2000000000 + i;
      break;
    case DType::I64:
      t->dataAs<int64_t>()[i] = (int64_t(1) << 62) - i;
      break;
    }
  }
  std::string file = path("t.npy");
  Status s = writeNpy(file, *t);
  ASSERT_TRUE(s.ok()) << s.message();
  Expected<Tensor> back = readNpy(file);
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->dtype(), type);
  EXPECT_EQ(back->shape(), (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(back->byteSize(), t->byteSize());
  EXPECT_EQ(std::memcmp(back->data(), t->data(), t->byteSize()), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(back->data()) % kTensorAlignment, 0u);

  // The header is what numpy writes, padded so the data is 64-byte aligned.
  std::string bytes = readBytes(file);
  std::string expected = std::string("{'descr': '") + dtypeNumpyCode(type) +
                         "', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(bytes.substr(10, expected.size()), expected);
  EXPECT_EQ(bytes[6], '\x01');
  EXPECT_EQ((bytes.size() - t->byteSize()) % 64, 0u);
  EXPECT_EQ(bytes[bytes.size() - t->byteSize() - 1], '\n');
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, NpyDTypeTest,
                         ::testing::Values(DType::F32, DType::F64, DType::I32,
                                           DType::I64),
                         [](const auto &info) {
                           return dtypeName(info.param);
                         });

TEST_F(NpyTest, RoundTripScalarAndEmptyShapes) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{}, {0}, {5}, {2, 0, 3}}) {
    SCOPED_TRACE(formatShape(shape));
    auto t = Tensor::allocate(DType::F32, shape);
    ASSERT_TRUE(t.ok());
    for (int64_t i = 0; i < t->numElements(); ++i)
      t->dataAs<float>()[i] = float(i);
    ASSERT_TRUE(writeNpy(path("s.npy"), *t).ok());
    auto back = readNpy(path("s.npy"));
    ASSERT_TRUE(back.ok()) << back.message();
    EXPECT_EQ(back->shape(), shape);
    EXPECT_EQ(valuesF32(*back), valuesF32(*t));
  }
  auto t = Tensor::allocate(DType::F32, {});
  ASSERT_TRUE(writeNpy(path("scalar.npy"), *t).ok());
  EXPECT_TRUE(mentions(readBytes(path("scalar.npy")), "'shape': (), }"));
  auto v = Tensor::allocate(DType::F32, {7});
  ASSERT_TRUE(writeNpy(path("vec.npy"), *v).ok());
  EXPECT_TRUE(mentions(readBytes(path("vec.npy")), "'shape': (7,), }"));
}

TEST_F(NpyTest, ReadsVersion2And3Headers) {
  std::string data = floatBytes({1, 2, 3, 4, 5, 6});
  for (int major : {2, 3}) {
    SCOPED_TRACE(major);
    std::string file = path("v.npy");
    writeBytes(file, npyBytes(major, header("<f4", "(3, 2)"), data));
    auto t = readNpy(file);
    ASSERT_TRUE(t.ok()) << t.message();
    EXPECT_EQ(t->shape(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(valuesF32(*t), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  }
}

TEST_F(NpyTest, ReadsHeaderVariants) {
  // Double quotes, no trailing comma, keys in another order, Python 2 longs.
  std::string file = path("v.npy");
  writeBytes(file, npyBytes(1,
                            "{\"shape\": (2L,), \"fortran_order\": False, "
                            "\"descr\": \"<i4\"}   \n",
                            int32Bytes({7, -8})));
  auto t = readNpy(file);
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->dtype(), DType::I32);
  EXPECT_EQ(t->elementAsInt(1), -8);
}

TEST_F(NpyTest, WritesVersion2WhenTheHeaderNeedsIt) {
  // 30000 dimensions of 1: the header is longer than version 1.0's 64 KiB.
  auto t = Tensor::allocate(DType::I64, std::vector<int64_t>(30000, 1));
  ASSERT_TRUE(t.ok());
  t->dataAs<int64_t>()[0] = 42;
  ASSERT_TRUE(writeNpy(path("big.npy"), *t).ok());
  std::string bytes = readBytes(path("big.npy"));
  EXPECT_EQ(bytes[6], '\x02');
  EXPECT_EQ((bytes.size() - 8) % 64, 0u);
  auto back = readNpy(path("big.npy"));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->rank(), 30000);
  EXPECT_EQ(back->elementAsInt(0), 42);
}

TEST_F(NpyTest, WriteReplacesAtomicallyAndLeavesNoTemporaries) {
  std::string file = path("out.npy");
  writeBytes(file, "old contents");
  ASSERT_TRUE(writeNpy(file, makeF32({2}, {1, 2})).ok());
  EXPECT_TRUE(readNpy(file).ok());
  int count = 0;
  for (auto &entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++count;
  }
  EXPECT_EQ(count, 1) << "a temporary file was left behind";

  Status s = writeNpy(path("no-such-dir/out.npy"), makeF32({2}, {1, 2}));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(mentions(s.message(), "no-such-dir/out.npy"));
}

TEST_F(NpyTest, RefusesMissingFile) {
  auto t = readNpy(path("missing.npy"));
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(mentions(t.message(), path("missing.npy")));
  EXPECT_TRUE(mentions(t.message(), "No such file"));
}

TEST_F(NpyTest, RefusesDirectory) {
  auto t = readNpy(dir);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(mentions(t.message(), "not a regular file"));
}

TEST_F(NpyTest, RefusesBadMagic) {
  EXPECT_TRUE(mentions(readError("PK\x03\x04 this is a zip file, not npy"),
                       "bad magic"));
  EXPECT_TRUE(mentions(readError("\x93NUM"), "too short"));
}

TEST_F(NpyTest, RefusesUnsupportedVersion) {
  std::string h = header("<f4", "(1,)");
  EXPECT_TRUE(mentions(readError(npyBytes(4, h, floatBytes({1}))),
                       "unsupported .npy format version 4.0"));
  std::string v11 = npyBytes(1, h, floatBytes({1}));
  v11[7] = 1;
  EXPECT_TRUE(mentions(readError(v11), "version 1.1"));
}

TEST_F(NpyTest, RefusesHeaderThatIsNotADict) {
  EXPECT_TRUE(mentions(
      readError(npyBytes(1, "['<f4', False, (1,)]\n", floatBytes({1}))),
      "not a dict"));
}

TEST_F(NpyTest, RefusesMissingKeys) {
  EXPECT_TRUE(mentions(
      readError(npyBytes(1, "{'descr': '<f4', 'fortran_order': False}\n",
                         floatBytes({1}))),
      "lacks the key 'shape'"));
  EXPECT_TRUE(mentions(
      readError(npyBytes(1, "{'shape': (1,), 'fortran_order': False}\n",
                         floatBytes({1}))),
      "lacks the key 'descr'"));
  EXPECT_TRUE(
      mentions(readError(npyBytes(1, "{'descr': '<f4', 'shape': (1,)}\n",
                                  floatBytes({1}))),
               "lacks the key 'fortran_order'"));
}

TEST_F(NpyTest, RefusesUnexpectedKey) {
  EXPECT_TRUE(
      mentions(readError(npyBytes(1,
                                  "{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (1,), 'extra': 1}\n",
                                  floatBytes({1}))),
               "unexpected key 'extra'"));
}

TEST_F(NpyTest, RefusesUnparsableHeader) {
  EXPECT_TRUE(mentions(readError(npyBytes(1, "{'descr': '<f4', 'shape': (1,\n",
                                          floatBytes({1}))),
                       "cannot parse the header"));
  EXPECT_TRUE(
      mentions(readError(npyBytes(1, "{'descr' '<f4'}\n", floatBytes({1}))),
               "cannot parse the header"));
  EXPECT_TRUE(
      mentions(readError(npyBytes(1,
                                  "{'descr': '<f4', 'fortran_order': nope, "
                                  "'shape': (1,)}\n",
                                  floatBytes({1}))),
               "cannot parse the header"));
}

TEST_F(NpyTest, RefusesMalformedValues) {
  EXPECT_TRUE(
      mentions(readError(npyBytes(1, header("<f4", "[1]"), floatBytes({1}))),
               "shape in the header is not a tuple"));
  EXPECT_TRUE(
      mentions(readError(npyBytes(1, header("<f4", "(-1,)"), floatBytes({1}))),
               "non-negative integers"));
  EXPECT_TRUE(mentions(
      readError(npyBytes(1, header("<f4", "(1,)", "0"), floatBytes({1}))),
      "fortran_order in the header is not True or False"));
}

TEST_F(NpyTest, RefusesBigEndian) {
  EXPECT_TRUE(
      mentions(readError(npyBytes(1, header(">f4", "(1,)"), floatBytes({1}))),
               "big-endian dtype '>f4'"));
}

TEST_F(NpyTest, RefusesFortranOrder) {
  EXPECT_TRUE(mentions(readError(npyBytes(1, header("<f4", "(2, 2)", "True"),
                                          floatBytes({1, 2, 3, 4}))),
                       "Fortran-order"));
}

TEST_F(NpyTest, RefusesUnsupportedDType) {
  EXPECT_TRUE(
      mentions(readError(npyBytes(1, header("<f2", "(2,)"), floatBytes({1}))),
               "unsupported dtype '<f2'"));
  EXPECT_TRUE(
      mentions(readError(npyBytes(1, header("|u1", "(4,)"), floatBytes({1}))),
               "unsupported dtype '|u1'"));
  EXPECT_TRUE(
      mentions(readError(npyBytes(1,
                                  "{'descr': [('a', '<f4')], 'fortran_order': "
                                  "False, 'shape': (1,)}\n",
                                  floatBytes({1}))),
               "structured"));
}

TEST_F(NpyTest, RefusesTruncatedData) {
  EXPECT_TRUE(mentions(
      readError(npyBytes(1, header("<f4", "(2, 3)"), floatBytes({1, 2}))),
      "truncated: shape [2,3] of <f4 needs 24 bytes but the file holds 8"));
}

TEST_F(NpyTest, RefusesTrailingBytes) {
  EXPECT_TRUE(mentions(
      readError(npyBytes(1, header("<f4", "(1,)"), floatBytes({1, 2}))),
      "4 trailing bytes after the data"));
}

TEST_F(NpyTest, RefusesAbsurdShapeWithoutAllocating) {
  EXPECT_TRUE(mentions(
      readError(npyBytes(1, header("<f8", "(1000000000000, 1000000000)"),
                         floatBytes({1}))),
      "too large"));
  EXPECT_TRUE(mentions(readError(npyBytes(1, header("<f8", "(1000000000000,)"),
                                          floatBytes({1}))),
                       "truncated"));
}

TEST_F(NpyTest, RefusesAbsurdHeaderLength) {
  std::string bytes = npyBytes(2, header("<f4", "(1,)"), floatBytes({1}));
  bytes[8] = bytes[9] = bytes[10] = bytes[11] = '\xff';
  EXPECT_TRUE(mentions(readError(bytes), "absurd header length 4294967295"));
  std::string v1 = npyBytes(1, header("<f4", "(1,)"), floatBytes({1}));
  v1[8] = '\xff';
  v1[9] = '\x10';
  EXPECT_TRUE(mentions(readError(v1), "exceeds the file size"));
}

} // namespace
