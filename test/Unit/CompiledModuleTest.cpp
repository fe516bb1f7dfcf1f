//===- CompiledModuleTest.cpp - Tests of module loading and calling -------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/CompiledModule.h"
#include "test/Unit/TestUtil.h"

using namespace hkt::runtime;
using namespace hkt::test;

namespace {

class CompiledModuleTest : public TempDirTest {
protected:
  /// Builds the tiny module and opens it (the test is skipped without cc).
  std::unique_ptr<CompiledModule> open() {
    auto m = CompiledModule::open(dir);
    EXPECT_TRUE(m.ok()) << m.message();
    return m.ok() ? std::move(m).value() : nullptr;
  }
};

TEST_F(CompiledModuleTest, CallsAnEntry) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(dir);
  auto module = open();
  ASSERT_TRUE(module);
  EXPECT_EQ(module->entries().size(), 4u);
  EXPECT_EQ(module->directory(), dir);
  const Entry *add = module->findEntry("add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->spec().symbol, "_hkt_packed_add");
  EXPECT_EQ(module->findEntry("nope"), nullptr);

  Tensor x = makeF32({4}, {1, 2, 3, 4});
  Tensor y = makeF32({4}, {10, 20, 30, 40.5f});
  Tensor z = makeF32({4}, {0, 0, 0, 0});
  Status s = add->call({&x, &y}, {&z});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(valuesF32(z), (std::vector<float>{11, 22, 33, 44.5f}));
}

TEST_F(CompiledModuleTest, PassesRankZeroResults) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(dir);
  auto module = open();
  ASSERT_TRUE(module);
  Tensor x = makeF32({4}, {1, 2, 3, 4.5f});
  auto s = Tensor::allocate(DType::F32, {});
  Status st = module->findEntry("sum")->call({&x}, {&*s});
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(s->dataAs<float>()[0], 10.5f);
}

TEST_F(CompiledModuleTest, BuildsDescriptorsPerTheContract) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(dir);
  auto module = open();
  ASSERT_TRUE(module);
  Tensor in = makeF32({2, 3}, {0, 1, 2, 3, 4, 5});
  auto out = Tensor::allocate(DType::I64, {8});
  Status st = module->findEntry("probe")->call({&in}, {&*out});
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<int64_t> got(out->dataAs<int64_t>(), out->dataAs<int64_t>() + 8);
  // allocated == aligned, offset 0, sizes [2,3], strides [3,1], 64-byte
  // aligned, element [1][2] == 5.
  EXPECT_EQ(got, (std::vector<int64_t>{1, 0, 2, 3, 3, 1, 0, 5}));
}

TEST_F(CompiledModuleTest, ChecksRangesOfIntegerInputs) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(dir);
  auto module = open();
  ASSERT_TRUE(module);
  const Entry *masked = module->findEntry("masked");
  Tensor x = makeF32({4}, {1, 2, 3, 4});
  Tensor y = makeF32({4}, {1, 1, 1, 1});
  Tensor keep = makeI32({4}, {1, 0, 1, 0});
  Tensor z = makeF32({4}, {9, 9, 9, 9});
  Status s = masked->call({&x, &y, &keep}, {&z});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(valuesF32(z), (std::vector<float>{2, 0, 4, 0}));

  Tensor bad = makeI32({4}, {1, 0, 1, 2});
  z = makeF32({4}, {9, 9, 9, 9});
  s = masked->call({&x, &y, &bad}, {&z});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "entry 'masked': input 'keep' has value 2 at row 3, "
                         "outside its range [0, 1]");
  EXPECT_EQ(valuesF32(z), (std::vector<float>{9, 9, 9, 9}))
      << "the code must not run";
}

TEST_F(CompiledModuleTest, ChecksShapesDTypesAndCounts) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(dir);
  auto module = open();
  ASSERT_TRUE(module);
  const Entry *add = module->findEntry("add");
  Tensor x = makeF32({4}, {1, 2, 3, 4});
  Tensor x5 = makeF32({5}, {1, 2, 3, 4, 5});
  Tensor xi = makeI32({4}, {1, 2, 3, 4});
  Tensor z = makeF32({4}, {0, 0, 0, 0});
  Tensor z2 = makeF32({2, 2}, {0, 0, 0, 0});

  Status s = add->call({&x5, &x}, {&z});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "entry 'add': input 'x' has shape [5], expected [4]");
  s = add->call({&x, &xi}, {&z});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "entry 'add': input 'y' has dtype i32, expected f32");
  s = add->call({&x, &x}, {&z2});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "entry 'add': result 'z' has shape [2,2], expected [4]");
  s = add->call({&x}, {&z});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "entry 'add' takes 2 inputs, got 1");
  s = add->call({&x, &x}, {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "entry 'add' takes 1 result, got 0");
  EXPECT_TRUE(add->check({&x, &x}, {&z}).ok());
}

TEST_F(CompiledModuleTest, NamesAMissingSymbol) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(dir);
  writeBytes(path("manifest.json"), tinyManifest({"add", "missing"}));
  auto m = CompiledModule::open(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(
      mentions(m.message(), "entry 'missing': symbol '_hkt_packed_missing'"));
}

TEST_F(CompiledModuleTest, ReportsDlopenErrors) {
  writeBytes(path("manifest.json"), tinyManifest({"add"}));
  auto missing = CompiledModule::open(dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(mentions(missing.message(), "dlopen failed"));
  EXPECT_TRUE(mentions(missing.message(), "module.so"));

  writeBytes(path("module.so"), "this is not an ELF file");
  auto garbage = CompiledModule::open(dir);
  ASSERT_FALSE(garbage.ok());
  EXPECT_TRUE(mentions(garbage.message(), "dlopen failed"));
}

TEST_F(CompiledModuleTest, ReportsAMissingOrBadManifest) {
  auto m = CompiledModule::open(path("nowhere"));
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(
      mentions(m.message(), "cannot load module '" + path("nowhere") + "'"));
  EXPECT_TRUE(mentions(m.message(), "manifest.json"));

  writeBytes(path("manifest.json"),
             "{\"format\": \"hkt-module\", \"version\": 9}");
  auto newer = CompiledModule::open(dir);
  ASSERT_FALSE(newer.ok());
  EXPECT_TRUE(mentions(newer.message(), "newer than this runtime reads"));
}

TEST_F(CompiledModuleTest, UpdatesInOutArgumentsInPlace) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(dir, {"step"});
  auto module = open();
  ASSERT_TRUE(module);
  const Entry *step = module->findEntry("step");
  ASSERT_NE(step, nullptr);
  ASSERT_TRUE(step->spec().hasInOutArgs());
  Tensor p = makeF32({4}, {1, 2, 3, 4});
  Tensor g = makeF32({4}, {2, 2, -2, 8});
  auto s = Tensor::allocate(DType::F32, {});
  const float *before = p.dataAs<float>();
  // The in-out argument is passed once, with the inputs; the call leaves
  // its new value in the same buffer.
  Status st = step->call({&p, &g}, {&*s});
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(p.dataAs<float>(), before);
  EXPECT_EQ(valuesF32(p), (std::vector<float>{0, 1, 4, 0}));
  EXPECT_EQ(s->dataAs<float>()[0], 5.0f);
  EXPECT_EQ(valuesF32(g), (std::vector<float>{2, 2, -2, 8}))
      << "inputs are not written";
  // A second step starts from the updated value.
  st = step->call({&p, &g}, {&*s});
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(valuesF32(p), (std::vector<float>{-1, 0, 5, -4}));
}

TEST_F(CompiledModuleTest, RefusesWrittenTensorsThatShareMemory) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(dir, {"add", "step"});
  auto module = open();
  ASSERT_TRUE(module);
  Tensor p = makeF32({4}, {1, 2, 3, 4});
  auto s = Tensor::allocate(DType::F32, {});
  // The in-out p also passed as the input g: the call would read g while it
  // writes p.
  Status st = module->findEntry("step")->call({&p, &p}, {&*s});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "entry 'step': in-out argument 'p' and input 'g' share memory, "
            "but the call writes in-out argument 'p'");
  EXPECT_EQ(valuesF32(p), (std::vector<float>{1, 2, 3, 4}))
      << "the code must not run";
  // A result over an input.
  Tensor x = makeF32({4}, {1, 2, 3, 4}), y = makeF32({4}, {1, 1, 1, 1});
  st = module->findEntry("add")->call({&x, &y}, {&x});
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(mentions(st.message(), "input 'x' and result 'z' share memory"));
  // Inputs may share memory: they are only read.
  Tensor z = makeF32({4}, {0, 0, 0, 0});
  st = module->findEntry("add")->call({&x, &x}, {&z});
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(valuesF32(z), (std::vector<float>{2, 4, 6, 8}));
}

TEST_F(CompiledModuleTest, ChecksDynamicDimensionsAndSizesResults) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(dir, {"twice"});
  auto module = open();
  ASSERT_TRUE(module);
  const Entry *twice = module->findEntry("twice");
  ASSERT_NE(twice, nullptr);
  EXPECT_EQ(twice->spec().args[0].describe(), "f32 [B<=8,2]");
  // Within the bound: the result takes the argument's size.
  Tensor x = makeF32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto shapes = twice->resultShapes({&x});
  ASSERT_TRUE(shapes.ok()) << shapes.message();
  ASSERT_EQ(shapes->size(), 1u);
  EXPECT_EQ((*shapes)[0], (std::vector<int64_t>{3, 2}));
  auto y = Tensor::allocate(DType::F32, (*shapes)[0]);
  Status st = twice->call({&x}, {&*y});
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(valuesF32(*y), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  // At the bound.
  Tensor x8 = makeF32({8, 2}, std::vector<float>(16, 1.5f));
  Tensor y8 = makeF32({8, 2}, std::vector<float>(16, 0));
  st = twice->call({&x8}, {&y8});
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(valuesF32(y8), std::vector<float>(16, 3.0f));
  // Above the bound: refused before the code runs, naming argument,
  // dimension and bound.
  Tensor x9 = makeF32({9, 2}, std::vector<float>(18, 1));
  Tensor y9 = makeF32({9, 2}, std::vector<float>(18, 7));
  st = twice->call({&x9}, {&y9});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "entry 'twice': input 'x' has size 9 in dimension "
                          "0 ('B'), above its bound 8");
  EXPECT_EQ(valuesF32(y9), std::vector<float>(18, 7));
  EXPECT_FALSE(twice->resultShapes({&x9}).ok());
  // A result whose size disagrees with the argument's.
  Tensor y4 = makeF32({4, 2}, std::vector<float>(8, 0));
  st = twice->call({&x}, {&y4});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "entry 'twice': result 'y' has shape [4,2], expected [3,2]");
  // The static dimension is still static.
  Tensor x3 = makeF32({2, 3}, {1, 2, 3, 4, 5, 6});
  st = twice->call({&x3}, {&*y});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "entry 'twice': input 'x' has shape [2,3], expected [B<=8,2]");
}

TEST_F(CompiledModuleTest, RefusesAVersionOneModule) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(dir, {"add"});
  std::string v1 = tinyManifest({"add"});
  v1.replace(v1.find("\"version\": 2"), 12, "\"version\": 1");
  writeBytes(path("manifest.json"), v1);
  auto m = CompiledModule::open(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), "cannot load module '" + dir + "': manifest '" +
                             path("manifest.json") +
                             "': version: the module has format version 1; "
                             "this runtime reads version 2: recompile it with "
                             "hkt-compile");
}

TEST_F(CompiledModuleTest, RefusesCudaModulesWithoutADriver) {
  // The library is never opened without a driver: its constructor would
  // load kernels. (The driver is opened once per process; the loader's other
  // cases run in their own processes, CudaDriverTest.cpp.)
  ::setenv("HKT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  std::string manifest = tinyManifest({"add"});
  manifest.replace(manifest.find("\"kind\": \"cpu\""), 13,
                   "\"kind\": \"cuda\", \"arch\": \"sm_90\"");
  writeBytes(path("manifest.json"), manifest);
  auto m = CompiledModule::open(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(mentions(m.message(),
                       "cannot run module '" + dir +
                           "' (it targets cuda, sm_90): no CUDA driver: "
                           "cannot load /nonexistent/libcuda.so.1"))
      << m.message();
}

TEST_F(CompiledModuleTest, RefusesUnknownTargetKinds) {
  std::string manifest = tinyManifest({"add"});
  manifest.replace(manifest.find("\"kind\": \"cpu\""), 13,
                   "\"kind\": \"fpga\"");
  writeBytes(path("manifest.json"), manifest);
  auto m = CompiledModule::open(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(mentions(m.message(), "cannot load module '" + dir + "'"));
  EXPECT_TRUE(mentions(m.message(), "target.kind: unknown target kind 'fpga' "
                                    "(this runtime knows cpu, cuda)"));
}

TEST_F(CompiledModuleTest, RefusesAnotherArchitecture) {
#if defined(__x86_64__)
  writeBytes(path("manifest.json"),
             tinyManifest({"add"}, {"neon"}, "aarch64-unknown-linux-gnu"));
  auto m = CompiledModule::open(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(
      mentions(m.message(), "compiled for 'aarch64-unknown-linux-gnu'"));
#else
  GTEST_SKIP() << "x86-64 hosts only";
#endif
}

} // namespace
