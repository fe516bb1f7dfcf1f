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
  "version": 2,
  "library": "module.so",
  "target": {"kind": "cpu", "triple": "x86_64-unknown-linux-gnu", "cpu": "znver5",
             "features": ["avx2", "+fma", "-avx512f", "slow-3ops-lea"]},
  "entries": [
    {"name": "layer", "symbol": "_hkt_packed_layer",
     "args": [
       {"name": "x", "role": "input", "dtype": "f32", "shape": [2, 64, 32]},
       {"name": "wq", "role": "parameter", "dtype": "f32", "shape": [32, 32]},
       {"name": "lengths", "role": "input", "dtype": "i32", "shape": [2], "default": 64, "range": [1, 64]},
       {"name": "scale", "role": "input", "dtype": "f64", "shape": [], "default": 0.5}
     ],
     "results": [{"name": "y", "role": "output", "dtype": "f32", "shape": [2, 64, 32]}],
     "future_field": {"ignored": true}},
    {"name": "step", "symbol": "_hkt_packed_step",
     "args": [
       {"name": "p", "role": "inout", "dtype": "f32", "shape": [32]},
       {"name": "tokens", "role": "input", "dtype": "i32", "shape": [-1, 16, -1],
        "dims": [{"symbol": "B", "max": 8}, null, {"symbol": "T", "max": 512}]},
       {"name": "mask", "role": "input", "dtype": "i32", "shape": [-1],
        "dims": [{"symbol": "B", "max": 8}]}
     ],
     "results": [
       {"name": "logits", "role": "output", "dtype": "f32", "shape": [-1, 10],
        "dims": [{"symbol": "B", "max": 8}, null]}
     ]},
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
  EXPECT_EQ(m->version, 2);
  EXPECT_EQ(m->target.kind, TargetKind::Cpu);
  EXPECT_EQ(targetKindName(m->target.kind), std::string("cpu"));
  EXPECT_TRUE(m->target.arch.empty());
  EXPECT_EQ(m->library, "module.so");
  EXPECT_EQ(m->target.triple, "x86_64-unknown-linux-gnu");
  EXPECT_EQ(m->target.cpu, "znver5");
  EXPECT_EQ(m->target.features,
            (std::vector<std::string>{"avx2", "fma", "slow-3ops-lea"}));
  ASSERT_EQ(m->entries.size(), 3u);
  EXPECT_EQ(m->entryNames(), "'layer', 'step', 'other'");
  const EntrySpec *layer = m->findEntry("layer");
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->symbol, "_hkt_packed_layer");
  ASSERT_EQ(layer->args.size(), 4u);
  EXPECT_EQ(layer->args[0].describe(), "f32 [2,64,32]");
  EXPECT_EQ(layer->args[0].role, Role::Input);
  EXPECT_FALSE(layer->args[0].hasDynamicDims());
  EXPECT_EQ(layer->args[1].role, Role::Parameter);
  EXPECT_EQ(layer->results[0].role, Role::Output);
  EXPECT_FALSE(layer->hasInOutArgs());
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
  EXPECT_EQ(m->entries[0].args[2].defaultValue->intValue, 64);
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

TEST(ManifestTest, RefusesOtherVersions) {
  std::string msg = parseError(variant("\"version\": 2", "\"version\": 3"));
  EXPECT_TRUE(
      mentions(msg, "format version 3, newer than this runtime reads (2)"));
  EXPECT_TRUE(
      mentions(parseError(variant("\"version\": 2", "\"version\": \"2\"")),
               "version: is not an integer"));
  EXPECT_TRUE(mentions(parseError(variant("\"version\": 2", "\"version\": 0")),
                       "invalid version 0"));
}

TEST(ManifestTest, RefusesVersionOneWithTheRecompileMessage) {
  // A version 1 manifest as hkt-compile wrote it: no roles, no target kind.
  const char *v1 = R"({"format": "hkt-module", "version": 1,
    "library": "module.so",
    "target": {"triple": "x86_64-unknown-linux-gnu", "cpu": "x86-64",
               "features": ["sse2"]},
    "entries": [{"name": "f", "symbol": "_hkt_packed_f",
      "args": [{"name": "x", "dtype": "f32", "shape": [4]}],
      "results": [{"name": "y", "dtype": "f32", "shape": [4]}]}]})";
  EXPECT_EQ(parseError(v1),
            "manifest 'dir/manifest.json': version: the module has format "
            "version 1; this runtime reads version 2: recompile it with "
            "hkt-compile");
}

TEST(ManifestTest, ReadsRoles) {
  Expected<Manifest> m = parseManifest(kGood, "good");
  ASSERT_TRUE(m.ok()) << m.message();
  const EntrySpec *step = m->findEntry("step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->args[0].role, Role::InOut);
  EXPECT_TRUE(step->args[0].isInOut());
  EXPECT_FALSE(step->args[1].isInOut());
  EXPECT_TRUE(step->hasInOutArgs());
  EXPECT_EQ(roleName(Role::InOut), std::string("inout"));
  EXPECT_EQ(roleName(Role::Parameter), std::string("parameter"));
}

TEST(ManifestTest, RefusesBadRoles) {
  EXPECT_TRUE(mentions(
      parseError(variant("\"role\": \"parameter\"", "\"role\": \"weight\"")),
      "entries[0] ('layer').args[1] ('wq'): unknown argument role 'weight' "
      "(expected input, parameter or inout)"));
  // Results are outputs; arguments never are.
  EXPECT_TRUE(mentions(
      parseError(variant("\"role\": \"parameter\"", "\"role\": \"output\"")),
      "unknown argument role 'output'"));
  EXPECT_TRUE(mentions(
      parseError(variant("\"role\": \"output\"", "\"role\": \"inout\"")),
      "results[0] ('y'): unknown result role 'inout' (results are output)"));
  EXPECT_TRUE(mentions(parseError(variant("\"role\": \"input\", ", "")),
                       "args[0] ('x'): missing field 'role'"));
  EXPECT_TRUE(
      mentions(parseError(variant("\"role\": \"input\"", "\"role\": 1")),
               "args[0] ('x').role: is not a string"));
}

TEST(ManifestTest, ReadsTargetKinds) {
  Expected<Manifest> cuda = parseManifest(
      variant("\"kind\": \"cpu\"", "\"kind\": \"cuda\", \"arch\": \"sm_90a\""),
      "m");
  ASSERT_TRUE(cuda.ok()) << cuda.message();
  EXPECT_EQ(cuda->target.kind, TargetKind::Cuda);
  EXPECT_EQ(cuda->target.arch, "sm_90a");
  // The host code's description is the same for every kind.
  EXPECT_EQ(cuda->target.cpu, "znver5");
  // One fatbin for several chips (hkt-compile --target nvvm's default).
  Expected<Manifest> fat = parseManifest(
      variant("\"kind\": \"cpu\"", "\"kind\": \"cuda\", \"arch\": \"sm_80,sm_90\""),
      "m");
  ASSERT_TRUE(fat.ok()) << fat.message();
  EXPECT_EQ(fat->target.arch, "sm_80,sm_90");
}

TEST(ManifestTest, RefusesBadTargetKinds) {
  EXPECT_EQ(parseError(variant("\"kind\": \"cpu\"", "\"kind\": \"tpu\"")),
            "manifest 'dir/manifest.json': target.kind: unknown target kind "
            "'tpu' (this runtime knows cpu, cuda)");
  EXPECT_TRUE(mentions(parseError(variant("\"kind\": \"cpu\", ", "")),
                       "target: missing field 'kind'"));
  EXPECT_TRUE(
      mentions(parseError(variant("\"kind\": \"cpu\"", "\"kind\": \"cuda\"")),
               "target: missing field 'arch'"));
  EXPECT_TRUE(mentions(
      parseError(variant("\"kind\": \"cpu\"",
                         "\"kind\": \"cuda\", \"arch\": \"compute_90\"")),
      "target.arch: 'compute_90' is not a CUDA architecture (sm_NN)"));
  EXPECT_TRUE(mentions(
      parseError(variant("\"kind\": \"cpu\"",
                         "\"kind\": \"cuda\", \"arch\": \"sm_80,compute_90\"")),
      "target.arch: 'compute_90' is not a CUDA architecture (sm_NN)"));
  EXPECT_TRUE(mentions(
      parseError(variant("\"kind\": \"cpu\"",
                         "\"kind\": \"cuda\", \"arch\": \"sm_80,\"")),
      "is not a list of CUDA architectures"));
  // One digit has no minor capability: what the driver's check could not read.
  EXPECT_TRUE(mentions(
      parseError(variant("\"kind\": \"cpu\"",
                         "\"kind\": \"cuda\", \"arch\": \"sm_9\"")),
      "target.arch: 'sm_9' is not a CUDA architecture (sm_NN)"));
}

TEST(ManifestTest, ReadsCpuPrecision) {
  Expected<Manifest> plain = parseManifest(kGood, "m");
  ASSERT_TRUE(plain.ok()) << plain.message();
  EXPECT_EQ(plain->target.precision, "f32");
  Expected<Manifest> bf16 =
      parseManifest(variant("\"kind\": \"cpu\"",
                            "\"kind\": \"cpu\", \"precision\": \"bf16\""),
                    "m");
  ASSERT_TRUE(bf16.ok()) << bf16.message();
  EXPECT_EQ(bf16->target.precision, "bf16");
  EXPECT_TRUE(mentions(
      parseError(variant("\"kind\": \"cpu\"",
                         "\"kind\": \"cpu\", \"precision\": \"fp8\"")),
      "target.precision: 'fp8' is not a precision of a cpu module (cpu: f32 "
      "or bf16; cuda modules have none)"));
  EXPECT_TRUE(
      mentions(parseError(variant("\"kind\": \"cpu\"",
                                  "\"kind\": \"cuda\", \"arch\": \"sm_90\", "
                                  "\"precision\": \"bf16\"")),
               "target.precision: 'bf16' is not a precision of a cuda module"));
  EXPECT_TRUE(
      mentions(parseError(variant("\"kind\": \"cpu\"",
                                  "\"kind\": \"cpu\", \"precision\": 16")),
               "target.precision: is not a string"));
}

// bf16 matmuls run on AMX tiles (the runtime asks Linux for the tile state)
// only where the features allow AMX, as hkt-compile chose; else AVX512-BF16.
TEST(ManifestTest, Bf16OnAmxOnlyWithItsFeatures) {
  auto target = [](const char *precision, const char *features) {
    Expected<Manifest> m = parseManifest(
        variant("\"features\": [\"avx2\", \"+fma\", \"-avx512f\", "
                "\"slow-3ops-lea\"]",
                std::string("\"precision\": \"") + precision +
                    "\", \"features\": [" + features + "]"),
        "m");
    EXPECT_TRUE(m.ok()) << m.message();
    return m->target;
  };
  EXPECT_TRUE(
      target("bf16", "\"amx-tile\", \"amx-bf16\", \"avx512bf16\"").usesAmx());
  EXPECT_FALSE(target("bf16", "\"avx512bf16\"").usesAmx());
  EXPECT_FALSE(target("bf16", "\"amx-tile\", \"avx512bf16\"").usesAmx());
  EXPECT_FALSE(
      target("f32", "\"amx-tile\", \"amx-bf16\", \"avx512bf16\"").usesAmx());
}

TEST(ManifestTest, ParsesCudaArchNames) {
  std::optional<CudaArch> a = parseCudaArch("sm_90a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->major, 9);
  EXPECT_EQ(a->minor, 0);
  a = parseCudaArch("sm_120");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->major, 12);
  EXPECT_EQ(a->minor, 0);
  for (const char *bad : {"sm_", "sm_9", "sm_90AB", "sm_90ab", "compute_90", "sm90"})
    EXPECT_FALSE(parseCudaArch(bad).has_value()) << bad;
  EXPECT_TRUE(
      mentions(parseError(variant("\"kind\": \"cpu\"",
                                  "\"kind\": \"cuda\", \"arch\": \"sm_\"")),
               "is not a CUDA architecture"));
}

TEST(ManifestTest, ReadsDynamicDimensions) {
  Expected<Manifest> m = parseManifest(kGood, "good");
  ASSERT_TRUE(m.ok()) << m.message();
  const EntrySpec &step = *m->findEntry("step");
  const TensorSpec &tokens = step.args[1];
  EXPECT_EQ(tokens.shape, (std::vector<int64_t>{-1, 16, -1}));
  ASSERT_TRUE(tokens.hasDynamicDims());
  ASSERT_EQ(tokens.dims.size(), 3u);
  ASSERT_TRUE(tokens.dims[0]);
  EXPECT_EQ(tokens.dims[0]->symbol, "B");
  EXPECT_EQ(tokens.dims[0]->max, 8);
  EXPECT_FALSE(tokens.dims[1]);
  EXPECT_EQ(tokens.dims[2]->max, 512);
  EXPECT_EQ(tokens.describe(), "i32 [B<=8,16,T<=512]");
  // Unbound symbols take their bound; bound ones their size.
  EXPECT_EQ(tokens.concreteShape(), (std::vector<int64_t>{8, 16, 512}));
  EXPECT_EQ(tokens.concreteShape({{"T", 100}}),
            (std::vector<int64_t>{8, 16, 100}));
}

TEST(ManifestTest, MatchesShapesAgainstDynamicDimensions) {
  Expected<Manifest> m = parseManifest(kGood, "good");
  ASSERT_TRUE(m.ok()) << m.message();
  const EntrySpec &step = *m->findEntry("step");
  const TensorSpec &tokens = step.args[1], &mask = step.args[2];
  DimSizes sizes;
  // Within the bounds, and at them.
  EXPECT_TRUE(tokens.matchShape({3, 16, 512}, sizes, "t").ok());
  EXPECT_EQ(sizes, (DimSizes{{"B", 3}, {"T", 512}}));
  EXPECT_TRUE(mask.matchShape({3}, sizes, "m").ok());
  // Above a bound: named with the dimension, its symbol and the bound.
  DimSizes fresh;
  Status s =
      tokens.matchShape({9, 16, 4}, fresh, "entry 'step': input 'tokens'");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "entry 'step': input 'tokens' has size 9 in "
                         "dimension 0 ('B'), above its bound 8");
  s = tokens.matchShape({2, 16, 513}, fresh, "t");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(mentions(s.message(), "size 513 in dimension 2 ('T'), above its "
                                    "bound 512"));
  s = tokens.matchShape({0, 16, 4}, fresh, "t");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(mentions(s.message(), "a dynamic dimension is at least 1"));
  // A symbol shared by two arguments must agree.
  s = mask.matchShape({4}, sizes, "entry 'step': input 'mask'");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "entry 'step': input 'mask' has size 4 in dimension "
                         "0 ('B'), but 'B' is 3 in an earlier argument");
  // Static dimensions and the rank are compared as before.
  s = tokens.matchShape({3, 15, 4}, fresh, "t");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "t has shape [3,15,4], expected [B<=8,16,T<=512]");
  s = tokens.matchShape({3, 16}, fresh, "t");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(mentions(s.message(), "has shape [3,16], expected"));
}

TEST(ManifestTest, RefusesBadDynamicDimensions) {
  const std::string dims =
      "\"dims\": [{\"symbol\": \"B\", \"max\": 8}, null, {\"symbol\": \"T\", "
      "\"max\": 512}]";
  EXPECT_TRUE(mentions(
      parseError(variant(",\n        " + dims, "")),
      "args[1] ('tokens'): shape [-1,16,-1] has a dynamic dimension (-1) but "
      "no dims"));
  EXPECT_TRUE(
      mentions(parseError(variant(dims, "\"dims\": [null, null, null]")),
               "args[1] ('tokens').dims[0]: is not an object"));
  EXPECT_TRUE(mentions(
      parseError(variant(dims, "\"dims\": [{\"symbol\": \"B\", \"max\": 8}]")),
      "dims is not an array of 3 entries (one per dimension)"));
  EXPECT_TRUE(mentions(parseError(variant("null, {\"symbol\": \"T\"",
                                          "{\"symbol\": \"C\", "
                                          "\"max\": 2}, {\"symbol\": \"T\"")),
                       "dims[1]: must be null: dimension 1 is static"));
  EXPECT_TRUE(mentions(parseError(variant("\"max\": 512", "\"max\": 0")),
                       "dims[2]: max is not an integer >= 1"));
  EXPECT_TRUE(mentions(
      parseError(variant("{\"symbol\": \"T\", ", "{\"symbol\": \"\", ")),
      "dims[2]: has an empty symbol"));
  EXPECT_TRUE(mentions(
      parseError(variant(
          "\"shape\": [32]",
          "\"shape\": [32], \"dims\": [{\"symbol\": \"B\", \"max\": 8}]")),
      "has dims but shape [32] has no dynamic dimension (-1)"));
  // One bound per symbol in an entry.
  EXPECT_TRUE(mentions(
      parseError(variant("\"dims\": [{\"symbol\": \"B\", \"max\": 8}]}",
                         "\"dims\": [{\"symbol\": \"B\", \"max\": 9}]}")),
      "entries[1] ('step'): argument 'mask' dimension 0 bounds symbol 'B' by 9 "
      "but argument 'tokens' dimension 0 bounds it by 8"));
  // A result's dynamic size must come from the arguments.
  EXPECT_TRUE(mentions(
      parseError(variant(
          "\"shape\": [-1, 10],\n        \"dims\": [{\"symbol\": \"B\"",
          "\"shape\": [-1, 10],\n        \"dims\": [{\"symbol\": \"N\"")),
      "result 'logits' dimension 0 has symbol 'N', which no argument has"));
}

TEST(ManifestTest, RefusesBadLibrary) {
  EXPECT_TRUE(mentions(parseError(variant("\"module.so\"", "\"../evil.so\"")),
                       "not a file name inside the module directory"));
  EXPECT_TRUE(mentions(parseError(variant("\"module.so\"", "3")),
                       "library: is not a string"));
}

TEST(ManifestTest, RefusesArgumentFieldsOnResults) {
  EXPECT_TRUE(
      mentions(parseError(variant("\"role\": \"output\",",
                                  "\"role\": \"output\", \"default\": 1,")),
               "results[0] ('y'): a result has no default"));
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

TEST(ManifestTest, RefusesNegativeDimensions) {
  EXPECT_TRUE(mentions(parseError(variant("[2, 64, 32]", "[2, -1, 32]")),
                       "shape [2,-1,32] has a dynamic dimension (-1) but no "
                       "dims"));
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
  EXPECT_EQ(m->entries.size(), 3u);
  Expected<Manifest> missing = readManifest(path("nope/manifest.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(mentions(missing.message(), path("nope/manifest.json")));
}

} // namespace

TEST(ManifestTest, ReadsWorkingMemory) {
  // Absent: an older manifest stays readable.
  Expected<Manifest> plain = parseManifest(kGood, "good");
  ASSERT_TRUE(plain.ok()) << plain.message();
  EXPECT_FALSE(plain->entries[0].workingMemoryBytes.has_value());
  Expected<Manifest> m = parseManifest(
      variant("\"future_field\"", "\"working_memory_bytes\": 5000000000, "
                                  "\"working_memory_per_thread_bytes\": 64, "
                                  "\"future_field\""),
      "m");
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(m->entries[0].workingMemoryBytes, 5000000000u);
  EXPECT_EQ(m->entries[0].workingMemoryPerThreadBytes, 64u);
  EXPECT_TRUE(mentions(
      parseError(variant("\"future_field\"",
                         "\"working_memory_bytes\": -1, \"future_field\"")),
      "working_memory_bytes: is not a non-negative integer"));
  EXPECT_TRUE(mentions(
      parseError(variant("\"future_field\"",
                         "\"working_memory_per_thread_bytes\": 1, "
                         "\"future_field\"")),
      "needs 'working_memory_bytes' too"));
}

TEST(ManifestTest, ReadsDataParallel) {
  std::string text = variant("\"entries\": [",
                             R"("data_parallel": {"mpi": "OpenMPI", "ranks": 3},
  "entries": [)");
  text.replace(text.find("\"name\": \"step\","), 15,
               "\"name\": \"step\", \"collectives\": true,");
  Expected<Manifest> m = parseManifest(text, "dir/manifest.json");
  ASSERT_TRUE(m.ok()) << m.message();
  ASSERT_TRUE(m->dataParallel.has_value());
  EXPECT_EQ(m->dataParallel->ranks, 3);
  EXPECT_EQ(m->dataParallel->mpi, "OpenMPI");
  // Only the entry that calls the collectives runs over the ranks.
  EXPECT_EQ(m->findEntry("step")->collectiveRanks, 3);
  EXPECT_EQ(m->findEntry("layer")->collectiveRanks, 0);
  // Without a backend (the first data-parallel modules): the module's MPI.
  EXPECT_EQ(m->dataParallel->backend, "mpi");
  EXPECT_EQ(m->findEntry("step")->collectiveBackend, "mpi");
  // A GPU module's sums: NCCL.
  std::string cuda = variant(
      "\"entries\": [",
      R"("data_parallel": {"mpi": "OpenMPI", "ranks": 2, "backend": "nccl"},
  "entries": [)");
  cuda.replace(cuda.find("\"kind\": \"cpu\""), 13,
               "\"kind\": \"cuda\", \"arch\": \"sm_90\"");
  cuda.replace(cuda.find("\"name\": \"step\","), 15,
               "\"name\": \"step\", \"collectives\": true,");
  Expected<Manifest> gpu = parseManifest(cuda, "dir/manifest.json");
  ASSERT_TRUE(gpu.ok()) << gpu.message();
  EXPECT_EQ(gpu->dataParallel->backend, "nccl");
  EXPECT_EQ(gpu->findEntry("step")->collectiveBackend, "nccl");
  EXPECT_EQ(gpu->findEntry("step")->collectiveRanks, 2);
  // A module of one process has neither.
  Expected<Manifest> plain = parseManifest(kGood, "dir/manifest.json");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->dataParallel.has_value());
}

TEST(ManifestTest, RefusesBadDataParallel) {
  auto with = [](const std::string &dataParallel) {
    return variant("\"entries\": [", "\"data_parallel\": " + dataParallel +
                                         ",\n  \"entries\": [");
  };
  EXPECT_TRUE(mentions(parseError(with(R"({"mpi": "OpenMPI", "ranks": 0})")),
                       "data_parallel.ranks: is not a positive integer"));
  EXPECT_TRUE(mentions(parseError(with(R"({"mpi": "OpenMPI"})")),
                       "data_parallel: missing field 'ranks'"));
  EXPECT_TRUE(mentions(parseError(with(R"({"ranks": 2})")),
                       "data_parallel: missing field 'mpi'"));
  EXPECT_TRUE(
      mentions(parseError(with("2")), "data_parallel: is not an object"));
  EXPECT_TRUE(mentions(
      parseError(with(R"({"mpi": "OpenMPI", "ranks": 2, "backend": "gloo"})")),
      "data_parallel.backend: is 'gloo'; this runtime knows 'mpi' and 'nccl'"));
  // NCCL sums device memory: not a CPU module's.
  EXPECT_TRUE(mentions(
      parseError(with(R"({"mpi": "OpenMPI", "ranks": 2, "backend": "nccl"})")),
      "data_parallel.backend: is 'nccl' in a module whose target is not cuda"));
  // Collectives without ranks to run them over.
  std::string text = kGood;
  text.replace(text.find("\"name\": \"step\","), 15,
               "\"name\": \"step\", \"collectives\": true,");
  EXPECT_TRUE(
      mentions(parseError(text),
               "calls collectives, but the module has no 'data_parallel'"));
}
