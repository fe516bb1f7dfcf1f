//===- SafeTensorsTest.cpp - Tests of the safetensors reader and writer ---===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/SafeTensors.h"
#include "test/Unit/TestUtil.h"

#include <cstring>

using namespace hkt::runtime;
using namespace hkt::test;

namespace {

class SafeTensorsTest : public TempDirTest {
protected:
  /// Writes `bytes` and reads them back; returns the error message.
  std::string readError(const std::string &bytes) {
    std::string file = path("bad.safetensors");
    writeBytes(file, bytes);
    auto f = readSafeTensors(file);
    EXPECT_FALSE(f.ok()) << "the file was accepted";
    if (!f.ok()) {
      EXPECT_TRUE(mentions(f.message(), file))
          << "the message must name the file";
    }
    return f.message();
  }
  /// A header with one tensor "w".
  static std::string one(const std::string &dtype, const std::string &shape,
                         const std::string &offsets) {
    return "{\"w\": {\"dtype\": \"" + dtype + "\", \"shape\": " + shape +
           ", \"data_offsets\": " + offsets + "}}";
  }
};

TEST_F(SafeTensorsTest, RoundTrip) {
  Tensor a = makeF32({2, 2}, {1, 2, 3, 4});
  Tensor b = makeI32({3}, {-1, 0, 7});
  auto c = Tensor::allocate(DType::F64, {});
  ASSERT_TRUE(c.ok());
  c->dataAs<double>()[0] = 0.125;
  auto d = Tensor::allocate(DType::I64, {0, 5});
  ASSERT_TRUE(d.ok());
  std::string file = path("p.safetensors");
  Status s = writeSafeTensors(
      file, {{"layer.a", &a}, {"b", &b}, {"c", &*c}, {"empty", &*d}},
      {{"format", "pt"}});
  ASSERT_TRUE(s.ok()) << s.message();

  std::string bytes = readBytes(file);
  uint64_t headerLen = 0;
  std::memcpy(&headerLen, bytes.data(), 8);
  EXPECT_EQ(headerLen % 8, 0u) << "the data buffer should start 8-byte aligned";

  auto f = readSafeTensors(file);
  ASSERT_TRUE(f.ok()) << f.message();
  ASSERT_EQ(f->tensors.size(), 4u);
  EXPECT_EQ(f->metadata.at("format"), "pt");
  const Tensor *ra = f->find("layer.a");
  ASSERT_NE(ra, nullptr);
  EXPECT_EQ(ra->shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(valuesF32(*ra), (std::vector<float>{1, 2, 3, 4}));
  const Tensor *rb = f->find("b");
  ASSERT_NE(rb, nullptr);
  EXPECT_EQ(rb->dtype(), DType::I32);
  EXPECT_EQ(rb->elementAsInt(0), -1);
  EXPECT_EQ(rb->elementAsInt(2), 7);
  ASSERT_NE(f->find("c"), nullptr);
  EXPECT_EQ(f->find("c")->rank(), 0);
  EXPECT_EQ(f->find("c")->elementAsDouble(0), 0.125);
  ASSERT_NE(f->find("empty"), nullptr);
  EXPECT_EQ(f->find("empty")->numElements(), 0);
  EXPECT_EQ(f->find("nope"), nullptr);
}

TEST_F(SafeTensorsTest, ReadsHandWrittenFile) {
  // Tensors listed out of data order, header padded with spaces.
  std::string header = "{\"__metadata__\": {\"k\": \"v\"}, "
                       "\"second\": {\"dtype\": \"I32\", \"shape\": [2], "
                       "\"data_offsets\": [8, 16]}, "
                       "\"first\": {\"dtype\": \"F32\", \"shape\": [1, 2], "
                       "\"data_offsets\": [0, 8]}}    ";
  writeBytes(
      path("h.safetensors"),
      safetensorsBytes(header, floatBytes({0.5f, -2}) + int32Bytes({3, 4})));
  auto f = readSafeTensors(path("h.safetensors"));
  ASSERT_TRUE(f.ok()) << f.message();
  ASSERT_EQ(f->tensors.size(), 2u);
  EXPECT_EQ(f->tensors[0].name, "first") << "tensors come in data order";
  EXPECT_EQ(valuesF32(f->tensors[0].tensor), (std::vector<float>{0.5f, -2}));
  EXPECT_EQ(f->tensors[1].tensor.elementAsInt(1), 4);
  EXPECT_EQ(f->metadata.at("k"), "v");
}

TEST_F(SafeTensorsTest, RefusesMissingFile) {
  auto f = readSafeTensors(path("missing.safetensors"));
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(mentions(f.message(), "missing.safetensors"));
}

TEST_F(SafeTensorsTest, RefusesTooShortFile) {
  EXPECT_TRUE(mentions(readError("abc"), "too short"));
}

TEST_F(SafeTensorsTest, RefusesHugeHeaderLength) {
  std::string bytes =
      safetensorsBytes(one("F32", "[1]", "[0, 4]"), floatBytes({1}));
  bytes[5] = '\x01'; // 2^40 + ...
  EXPECT_TRUE(mentions(readError(bytes), "-byte limit"));
}

TEST_F(SafeTensorsTest, RefusesHeaderLargerThanFile) {
  std::string bytes =
      safetensorsBytes(one("F32", "[1]", "[0, 4]"), floatBytes({1}));
  bytes[0] = '\x00';
  bytes[1] = '\x10'; // 4096 bytes of header in a ~60-byte file
  EXPECT_TRUE(mentions(readError(bytes), "exceeds the file size"));
}

TEST_F(SafeTensorsTest, RefusesNonJSONHeader) {
  EXPECT_TRUE(
      mentions(readError(safetensorsBytes("{\"w\": {", "")), "not valid JSON"));
  EXPECT_TRUE(
      mentions(readError(safetensorsBytes("[1, 2]", "")), "not a JSON object"));
}

TEST_F(SafeTensorsTest, RefusesMissingFields) {
  for (const char *field : {"dtype", "shape", "data_offsets"}) {
    SCOPED_TRACE(field);
    std::string header = "{\"w\": {";
    if (std::string(field) != "dtype")
      header += "\"dtype\": \"F32\", ";
    if (std::string(field) != "shape")
      header += "\"shape\": [1], ";
    if (std::string(field) != "data_offsets")
      header += "\"data_offsets\": [0, 4], ";
    header += "\"x\": 0}}";
    std::string msg = readError(safetensorsBytes(header, floatBytes({1})));
    EXPECT_TRUE(mentions(msg, std::string("lacks '") + field + "'"));
    EXPECT_TRUE(mentions(msg, "tensor 'w'"));
  }
  EXPECT_TRUE(
      mentions(readError(safetensorsBytes("{\"w\": 3}", "")), "not an object"));
}

TEST_F(SafeTensorsTest, RefusesFieldsOfTheWrongType) {
  EXPECT_TRUE(mentions(
      readError(safetensorsBytes(
          "{\"w\": {\"dtype\": 32, \"shape\": [1], \"data_offsets\": [0, 4]}}",
          floatBytes({1}))),
      "'dtype' is not a string"));
  EXPECT_TRUE(mentions(
      readError(safetensorsBytes(one("F32", "3", "[0, 4]"), floatBytes({1}))),
      "'shape' is not an array"));
  EXPECT_TRUE(mentions(readError(safetensorsBytes(one("F32", "[-1]", "[0, 4]"),
                                                  floatBytes({1}))),
                       "non-negative integers"));
  EXPECT_TRUE(mentions(
      readError(safetensorsBytes(one("F32", "[1]", "[0]"), floatBytes({1}))),
      "exactly two integers"));
  EXPECT_TRUE(mentions(readError(safetensorsBytes(one("F32", "[1]", "[0, 4.5]"),
                                                  floatBytes({1}))),
                       "non-negative integers"));
}

TEST_F(SafeTensorsTest, RefusesUnsupportedDType) {
  std::string msg = readError(
      safetensorsBytes(one("BF16", "[2]", "[0, 4]"), floatBytes({1})));
  EXPECT_TRUE(mentions(msg, "unsupported dtype 'BF16'"));
  EXPECT_TRUE(mentions(msg, "tensor 'w'"));
  EXPECT_TRUE(mentions(
      readError(safetensorsBytes(one("Q7", "[1]", "[0, 4]"), floatBytes({1}))),
      "unknown dtype 'Q7'"));
}

TEST_F(SafeTensorsTest, RefusesOffsetsOutOfRange) {
  EXPECT_TRUE(mentions(
      readError(safetensorsBytes(one("F32", "[2]", "[0, 8]"), floatBytes({1}))),
      "past the end of the data buffer (4 bytes)"));
  EXPECT_TRUE(mentions(
      readError(safetensorsBytes(one("F32", "[0]", "[4, 0]"), floatBytes({1}))),
      "begin after end"));
}

TEST_F(SafeTensorsTest, RefusesSizeInconsistentWithShape) {
  std::string msg = readError(
      safetensorsBytes(one("F64", "[2]", "[0, 8]"), floatBytes({1, 2, 3, 4})));
  EXPECT_TRUE(mentions(msg, "span 8 bytes but F64 [2] needs 16"));
}

TEST_F(SafeTensorsTest, RefusesOverlappingTensors) {
  std::string header =
      "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
      "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}";
  EXPECT_TRUE(
      mentions(readError(safetensorsBytes(header, floatBytes({1, 2, 3}))),
               "tensors 'a' [0, 8] and 'b' [4, 12] overlap"));
}

TEST_F(SafeTensorsTest, RefusesDuplicateNames) {
  std::string header =
      "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, "
      "\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}";
  EXPECT_TRUE(mentions(readError(safetensorsBytes(header, floatBytes({1, 2}))),
                       "tensor 'a' appears twice"));
}

TEST_F(SafeTensorsTest, RefusesBadMetadata) {
  EXPECT_TRUE(
      mentions(readError(safetensorsBytes("{\"__metadata__\": [1]}", "")),
               "'__metadata__' is not an object"));
  EXPECT_TRUE(mentions(
      readError(safetensorsBytes("{\"__metadata__\": {\"n\": 1}}", "")),
      "'__metadata__' entry 'n' is not a string"));
}

TEST_F(SafeTensorsTest, WriterRefusesDuplicateNames) {
  Tensor a = makeF32({1}, {1});
  Status s = writeSafeTensors(path("d.safetensors"), {{"a", &a}, {"a", &a}});
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(mentions(s.message(), "'a'"));
  EXPECT_FALSE(fileExists(path("d.safetensors")));
}

} // namespace
