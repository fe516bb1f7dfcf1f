//===- ManifestTest.cpp - Tests of manifest.json parsing ------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/Manifest.h"
#include "test/Unit/TestUtil.h"

using namespace hkt::runtime;
using namespace hkt::test;

namespace {

const char *const kGood = R"({
  "format": "hkt-module",
  "version": 1,
  "library": "module.so",
  "target": {"triple": "x86_64-unknown-linux-gnu", "cpu": "znver5",
             "features": ["avx2", "+fma", "-avx512f", "slow-3ops-lea"]},
  "entries": [
    {"name": "layer", "symbol": "_hkt_packed_layer",
     "args": [
       {"name": "x", "dtype": "f32", "shape": [2, 64, 32]},
       {"name": "lengths", "dtype": "i32", "shape": [2], "default": 64, "range": [1, 64]},
       {"name": "scale", "dtype": "f64", "shape": [], "default": 0.5}
     ],
     "results": [{"name": "y", "dtype": "f32", "shape": [2, 64, 32]}],
     "future_field": {"ignored": true}},
    {"name": "other", "symbol": "_hkt_packed_other", "args": [], "results": []}
  ]
})";

/// kGood with the first occurrence of `from` replaced by `to`.
std::string variant(const std::string &from, const std::string &to) {
  std::string s = kGood;
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    s.replace(at, from.size(), to);
  return s;
}

/// Parses `text`, expecting a failure; returns its message.
std::string parseError(const std::string &text) {
  Expected<Manifest> m = parseManifest(text, "dir/manifest.json");
  EXPECT_FALSE(m.ok()) << "the manifest was accepted";
  if (!m.ok()) {
    EXPECT_TRUE(mentions(m.message(), "manifest 'dir/manifest.json'"));
  }
  return m.message();
}

TEST(ManifestTest, ParsesAGoodManifest) {
  Expected<Manifest> m = parseManifest(kGood, "good");
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(m->version, 1);
  EXPECT_EQ(m->library, "module.so");
  EXPECT_EQ(m->target.triple, "x86_64-unknown-linux-gnu");
  EXPECT_EQ(m->target.cpu, "znver5");
  EXPECT_EQ(m->target.features,
            (std::vector<std::string>{"avx2", "fma", "slow-3ops-lea"}));
  ASSERT_EQ(m->entries.size(), 2u);
  EXPECT_EQ(m->entryNames(), "'layer', 'other'");
  const EntrySpec *layer = m->findEntry("layer");
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->symbol, "_hkt_packed_layer");
  ASSERT_EQ(layer->args.size(), 3u);
  EXPECT_EQ(layer->args[0].describe(), "f32 [2,64,32]");
  EXPECT_FALSE(layer->args[0].defaultValue);
  EXPECT_FALSE(layer->args[0].range);
  const TensorSpec *lengths = layer->findArg("lengths");
  ASSERT_NE(lengths, nullptr);
  EXPECT_EQ(lengths->dtype, DType::I32);
  ASSERT_TRUE(lengths->defaultValue);
  EXPECT_TRUE(lengths->defaultValue->isInteger);
  EXPECT_EQ(lengths->defaultValue->intValue, 64);
  EXPECT_EQ(lengths->range, (std::pair<int64_t, int64_t>{1, 64}));
  const TensorSpec *scale = layer->findArg("scale");
  ASSERT_NE(scale, nullptr);
  EXPECT_TRUE(scale->shape.empty());
  ASSERT_TRUE(scale->defaultValue);
  EXPECT_FALSE(scale->defaultValue->isInteger);
  EXPECT_EQ(scale->defaultValue->floatValue, 0.5);
  EXPECT_EQ(scale->defaultValue->str(), "0.5");
  ASSERT_NE(layer->findResult("y"), nullptr);
  EXPECT_EQ(layer->findResult("x"), nullptr);
  EXPECT_EQ(m->findEntry("nope"), nullptr);
}

TEST(ManifestTest, AcceptsIntegralFloatDefaultForIntegers) {
  Expected<Manifest> m =
      parseManifest(variant("\"default\": 64,", "\"default\": 64.0,"), "m");
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(m->entries[0].args[1].defaultValue->intValue, 64);
}

TEST(ManifestTest, RefusesInvalidJSON) {
  EXPECT_TRUE(mentions(parseError("{\"format\": "), "not valid JSON"));
  EXPECT_TRUE(mentions(parseError("[]"), "not a JSON object"));
}

TEST(ManifestTest, RefusesUnknownFormat) {
  EXPECT_TRUE(mentions(parseError(variant("\"hkt-module\"", "\"onnx\"")),
                       "unknown format 'onnx'"));
  EXPECT_TRUE(mentions(parseError(variant("\"format\": \"hkt-module\",", "")),
                       "missing field 'format'"));
}

TEST(ManifestTest, RefusesNewerVersion) {
  std::string msg = parseError(variant("\"version\": 1", "\"version\": 2"));
  EXPECT_TRUE(
      mentions(msg, "format version 2, newer than this runtime reads (1)"));
  EXPECT_TRUE(
      mentions(parseError(variant("\"version\": 1", "\"version\": \"1\"")),
               "version: is not an integer"));
  EXPECT_TRUE(mentions(parseError(variant("\"version\": 1", "\"version\": 0")),
                       "invalid version 0"));
}

TEST(ManifestTest, RefusesBadLibrary) {
  EXPECT_TRUE(mentions(parseError(variant("\"module.so\"", "\"../evil.so\"")),
                       "not a file name inside the module directory"));
  EXPECT_TRUE(mentions(parseError(variant("\"module.so\"", "3")),
                       "library: is not a string"));
}

TEST(ManifestTest, RefusesBadTarget) {
  EXPECT_TRUE(mentions(
      parseError(variant("\"features\": [", "\"features\": 3, \"x\": [")),
      "target.features: is not an array"));
  EXPECT_TRUE(mentions(parseError(variant("\"cpu\": \"znver5\",", "")),
                       "target: missing field 'cpu'"));
  EXPECT_TRUE(mentions(parseError(variant("\"avx2\"", "7")),
                       "target.features: holds something other than strings"));
}

TEST(ManifestTest, RefusesUnknownDType) {
  std::string msg =
      parseError(variant("\"dtype\": \"f32\"", "\"dtype\": \"bf16\""));
  EXPECT_TRUE(mentions(msg, "unknown dtype 'bf16'"));
  EXPECT_TRUE(mentions(msg, "entries[0] ('layer').args[0] ('x')"));
}

TEST(ManifestTest, RefusesDynamicAndNegativeDimensions) {
  EXPECT_TRUE(mentions(parseError(variant("[2, 64, 32]", "[2, -1, 32]")),
                       "dynamic dimension (-1)"));
  EXPECT_TRUE(mentions(parseError(variant("[2, 64, 32]", "[2, -3, 32]")),
                       "negative dimension"));
  EXPECT_TRUE(mentions(parseError(variant("[2, 64, 32]", "[2, 6.5, 32]")),
                       "shape holds something other than integers"));
  EXPECT_TRUE(mentions(parseError(variant("[2, 64, 32]", "\"2x64\"")),
                       "shape is not an array"));
}

TEST(ManifestTest, RefusesBadRanges) {
  EXPECT_TRUE(
      mentions(parseError(variant("\"range\": [1, 64]", "\"range\": [64, 1]")),
               "range [64, 1] is empty"));
  EXPECT_TRUE(
      mentions(parseError(variant("\"range\": [1, 64]", "\"range\": [1]")),
               "range is not a pair of integers"));
  EXPECT_TRUE(
      mentions(parseError(variant("\"default\": 0.5",
                                  "\"default\": 0.5, \"range\": [0, 1]")),
               "has a range but dtype f64 is not an integer type"));
  EXPECT_TRUE(mentions(
      parseError(variant("\"range\": [1, 64]", "\"range\": [1, 5000000000]")),
      "does not fit in i32"));
}

TEST(ManifestTest, RefusesBadDefaults) {
  EXPECT_TRUE(
      mentions(parseError(variant("\"default\": 64,", "\"default\": \"64\",")),
               "default is not a number"));
  EXPECT_TRUE(
      mentions(parseError(variant("\"default\": 64,", "\"default\": 1.5,")),
               "default 1.5 is not an integer but dtype is i32"));
  EXPECT_TRUE(
      mentions(parseError(variant("\"default\": 64,", "\"default\": 65,")),
               "default 65 is outside its range [1, 64]"));
}

TEST(ManifestTest, RefusesDuplicateNames) {
  EXPECT_TRUE(mentions(
      parseError(variant("\"name\": \"other\"", "\"name\": \"layer\"")),
      "entry name 'layer' is used twice"));
  EXPECT_TRUE(
      mentions(parseError(variant("\"name\": \"lengths\"", "\"name\": \"x\"")),
               "name 'x' is used twice"));
}

TEST(ManifestTest, RefusesMalformedEntries) {
  EXPECT_TRUE(
      mentions(parseError(variant("\"symbol\": \"_hkt_packed_layer\",", "")),
               "entries[0] ('layer'): missing field 'symbol'"));
  EXPECT_TRUE(
      mentions(parseError(variant("\"args\": [", "\"args\": 3, \"a\": [")),
               "args: is not an array"));
  std::string noEntries = kGood;
  noEntries =
      noEntries.substr(0, noEntries.find("\"entries\"")) + "\"entries\": []}";
  EXPECT_TRUE(
      mentions(parseError(noEntries), "entries: is not a non-empty array"));
}

class ManifestFileTest : public TempDirTest {};

TEST_F(ManifestFileTest, ReadsFileAndNamesMissingOne) {
  writeBytes(path("manifest.json"), kGood);
  Expected<Manifest> m = readManifest(path("manifest.json"));
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(m->entries.size(), 2u);
  Expected<Manifest> missing = readManifest(path("nope/manifest.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(mentions(missing.message(), path("nope/manifest.json")));
}

} // namespace
