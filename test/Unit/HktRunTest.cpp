//===- HktRunTest.cpp - End-to-end tests of the hkt-run tool --------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/Npy.h"
#include "runtime/SafeTensors.h"
#include "runtime/train/Checkpoint.h"
#include "test/Unit/TestUtil.h"

#include <cstdlib>
#include <sys/stat.h>
#include <sys/wait.h>

using namespace hkt::runtime;
using namespace hkt::train;
using namespace hkt::test;

namespace {

struct RunResult {
  int exitCode = -1;
  std::string out, err;
};

class HktRunTest : public TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    module = path("mod");
    ASSERT_EQ(::mkdir(module.c_str(), 0777), 0);
    ASSERT_TRUE(writeNpy(path("x.npy"), makeF32({4}, {1, 2, 3, 4})).ok());
    ASSERT_TRUE(writeNpy(path("y.npy"), makeF32({4}, {10, 20, 30, 40})).ok());
  }

  /// Runs hkt-run with `args` (each shell-quoted), with `env` prefixed.
  RunResult run(const std::vector<std::string> &args,
                const std::string &env = "") {
    std::string cmd = env + " '" HKT_RUN_PATH "'";
    for (const std::string &a : args)
      cmd += " '" + a + "'";
    cmd += " >'" + path("stdout") + "' 2>'" + path("stderr") + "'";
    RunResult r;
    int status = std::system(cmd.c_str());
    r.exitCode =
        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = readBytes(path("stdout"));
    r.err = readBytes(path("stderr"));
    return r;
  }

  /// The values of an f32 .npy file.
  std::vector<float> readF32(const std::string &file) {
    auto t = readNpy(file);
    EXPECT_TRUE(t.ok()) << t.message();
    return t.ok() ? valuesF32(*t) : std::vector<float>{};
  }

  std::string module;
};

#define EXPECT_ERROR(result, code, text)                                       \
  do {                                                                         \
    RunResult r_ = (result);                                                   \
    EXPECT_EQ(r_.exitCode, code) << r_.err;                                    \
    EXPECT_TRUE(mentions(r_.err, "hkt-run: error: "));                         \
    EXPECT_TRUE(mentions(r_.err, text));                                       \
  } while (0)

TEST_F(HktRunTest, BindsInputsAndWritesOutputs) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module);
  RunResult r =
      run({module, "--entry", "add", "--input", "x=" + path("x.npy"), "--input",
           "y=" + path("y.npy"), "--output", "z=" + path("z.npy")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readF32(path("z.npy")), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_TRUE(mentions(r.err, "entry 'add'"));
  EXPECT_TRUE(mentions(r.err, "arg x: f32 [4] from file " + path("x.npy")));
  EXPECT_TRUE(mentions(r.err, " ms"));
  EXPECT_TRUE(mentions(r.err, "wrote z (f32 [4]) to " + path("z.npy")));
  EXPECT_TRUE(r.out.empty());

  r = run({module, "--quiet", "--entry=add", "--input=x=" + path("x.npy"),
           "--input", "y=" + path("y.npy"), "--output", "z=" + path("z2.npy")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_EQ(readF32(path("z2.npy")), (std::vector<float>{11, 22, 33, 44}));
}

TEST_F(HktRunTest, BindsParamsWithAPrefix) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module);
  Tensor x = makeF32({4}, {1, 1, 1, 1}), y = makeF32({4}, {2, 3, 4, 5});
  Tensor other = makeF32({2}, {0, 0});
  ASSERT_TRUE(
      writeSafeTensors(path("p.safetensors"),
                       {{"model.x", &x}, {"model.y", &y}, {"head.w", &other}})
          .ok());
  RunResult r =
      run({module, "--entry", "add", "--params", path("p.safetensors"),
           "--params-prefix", "model.", "--output", "z=" + path("z.npy")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readF32(path("z.npy")), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_TRUE(
      mentions(r.err, "from params " + path("p.safetensors") + " ('model.y')"));

  // Without the prefix, every tensor must be used.
  EXPECT_ERROR(
      run({module, "--entry", "add", "--params", path("p.safetensors")}), 1,
      "unused tensor 'model.x' in " + path("p.safetensors") +
          ": entry 'add' has no argument of that name");
}

TEST_F(HktRunTest, FillsDefaultsAndRandomValues) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module);
  // keep defaults to 1: z = x + y, even with --random.
  RunResult r = run({module, "--entry", "masked", "--input",
                     "x=" + path("x.npy"), "--input", "y=" + path("y.npy"),
                     "--random", "3", "--output", "z=" + path("z.npy")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readF32(path("z.npy")), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_TRUE(mentions(r.err, "arg keep: i32 [4] from default 1"));

  // Random inputs are deterministic in the seed and in [-0.5, 0.5).
  auto randomZ = [&](const char *seed, const char *file) {
    RunResult rr = run({module, "--entry", "add", "--random", seed, "--output",
                        std::string("z=") + path(file)});
    EXPECT_EQ(rr.exitCode, 0) << rr.err;
    EXPECT_TRUE(
        mentions(rr.err, std::string("from random (seed ") + seed + ")"));
    return readF32(path(file));
  };
  std::vector<float> a = randomZ("42", "a.npy"), b = randomZ("42", "b.npy"),
                     c = randomZ("43", "c.npy");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  ASSERT_EQ(a.size(), 4u);
  for (float v : a) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
  // A bound input is used as given, the other filled.
  r = run({module, "--entry", "add", "--input", "x=" + path("x.npy"),
           "--random", "42", "--output", "z=" + path("d.npy")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<float> d = readF32(path("d.npy"));
  ASSERT_EQ(d.size(), 4u);
  // y is filled from its own stream (seed and name), whether x is bound or
  // not: y = d - x must be the y in a = x' + y.
  for (int i = 0; i < 4; ++i) {
    float yRandom = d[i] - float(i + 1);
    EXPECT_GE(yRandom, -0.5f);
    EXPECT_LT(yRandom, 0.5f);
    EXPECT_GE(a[i] - yRandom, -0.5f - 1e-6f);
    EXPECT_LT(a[i] - yRandom, 0.5f + 1e-6f);
  }
}

TEST_F(HktRunTest, ChoosesTheOnlyEntry) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module, {"add"});
  RunResult r = run({module, "--input", "x=" + path("x.npy"), "--input",
                     "y=" + path("y.npy"), "--output", "z=" + path("z.npy")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readF32(path("z.npy")), (std::vector<float>{11, 22, 33, 44}));
}

TEST_F(HktRunTest, RefusesAmbiguousOrUnknownEntries) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module);
  EXPECT_ERROR(
      run({module, "--random", "1"}), 1,
      "has several entries; choose one with --entry: 'add', 'masked', 'sum', "
      "'probe'");
  EXPECT_ERROR(
      run({module, "--entry", "mul", "--random", "1"}), 1,
      "has no entry 'mul'; its entries are: 'add', 'masked', 'sum', 'probe'");
}

TEST_F(HktRunTest, ChoosesTheEntryTheNamesFit) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module);
  // Only 'sum' has the result s.
  RunResult r = run({module, "--input", "x=" + path("x.npy"), "--output",
                     "s=" + path("s.npy")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(mentions(r.err, "entry 'sum' (the only entry that takes "
                              "--input x, --output s)"))
      << r.err;
  EXPECT_EQ(readF32(path("s.npy")), (std::vector<float>{10}));
  // 'add' and 'masked' both take x and y and give z: refused, with every
  // entry's arguments and results.
  EXPECT_ERROR(run({module, "--input", "x=" + path("x.npy"), "--input",
                    "y=" + path("y.npy"), "--output", "z=" + path("z.npy")}),
               1,
               "has several entries; choose one with --entry: 'add', "
               "'masked', 'sum', 'probe' (2 of them take --input x, --input "
               "y, --output z)\n  add(x, y) -> z\n  masked(x, y, keep) -> "
               "z\n  sum(x) -> s\n  probe(in) -> out");
  // No entry has them all.
  EXPECT_ERROR(run({module, "--input", "x=" + path("x.npy"), "--output",
                    "out=" + path("o.npy")}),
               1,
               "has no entry that takes --input x, --output out; its entries "
               "are:\n  add(x, y) -> z");
}

TEST_F(HktRunTest, SkipsACheckpointsOptimizerState) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module);
  Tensor x = makeF32({4}, {1, 1, 1, 1}), y = makeF32({4}, {2, 3, 4, 5});
  Tensor m = makeF32({4}, {0, 0, 0, 0});
  std::vector<std::pair<std::string, const Tensor *>> tensors = {
      {"x", &x}, {"y", &y}, {"adam.m.x", &m}, {"adam.v.y", &m}};
  ASSERT_TRUE(writeCheckpoint(path("c.safetensors"), tensors, {}).ok());
  RunResult r = run({module, "--entry", "add", "--params",
                     path("c.safetensors"), "--output", "z=" + path("z.npy")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readF32(path("z.npy")), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_TRUE(mentions(r.err, "skipped 2 optimizer-state tensors (adam.m.*, "
                              "adam.v.*) of the checkpoint " +
                                  path("c.safetensors")))
      << r.err;
  // The same tensors in a plain weight file: adam.m.x is a misspelt name.
  ASSERT_TRUE(writeSafeTensors(path("p.safetensors"), tensors).ok());
  EXPECT_ERROR(run({module, "--entry", "add", "--params", path("p.safetensors"),
                    "--output", "z=" + path("z.npy")}),
               1, "unused tensor 'adam.m.x' in " + path("p.safetensors"));
}

TEST_F(HktRunTest, RefusesBadBindings) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module);
  std::string x = "x=" + path("x.npy"), y = "y=" + path("y.npy");
  EXPECT_ERROR(run({module, "--entry", "add", "--input", "w=" + path("x.npy"),
                    "--input", y}),
               1,
               "entry 'add' has no argument 'w'; its arguments are: 'x', 'y'");
  EXPECT_ERROR(
      run({module, "--entry", "add", "--input", x, "--input", x, "--input", y}),
      1, "argument 'x' is bound twice");
  Tensor t = makeF32({4}, {0, 0, 0, 0});
  ASSERT_TRUE(writeSafeTensors(path("p.safetensors"), {{"x", &t}}).ok());
  EXPECT_ERROR(run({module, "--entry", "add", "--input", x, "--input", y,
                    "--params", path("p.safetensors")}),
               1,
               "argument 'x' is bound twice: by file " + path("x.npy") +
                   " and by params");
  EXPECT_ERROR(run({module, "--entry", "add", "--input", x}), 1,
               "entry 'add' has unbound argument 'y' (f32 [4]); bind with "
               "--input y=FILE.npy");
  EXPECT_ERROR(run({module, "--entry", "add", "--input", x}), 1,
               "--random SEED");
}

TEST_F(HktRunTest, RefusesBadOutputs) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module);
  std::string x = "x=" + path("x.npy"), y = "y=" + path("y.npy");
  EXPECT_ERROR(run({module, "--entry", "add", "--input", x, "--input", y,
                    "--output", "w=" + path("w.npy")}),
               1, "entry 'add' has no result 'w'; its results are: 'z'");
  EXPECT_ERROR(
      run({module, "--entry", "add", "--input", x, "--input", y, "--output",
           "z=" + path("a.npy"), "--output", "z=" + path("b.npy")}),
      1, "result 'z' is given to --output twice");
  EXPECT_FALSE(fileExists(path("a.npy")));
}

TEST_F(HktRunTest, RefusesBadShapesWithoutClobberingOutputs) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module);
  ASSERT_TRUE(writeNpy(path("x5.npy"), makeF32({5}, {1, 2, 3, 4, 5})).ok());
  writeBytes(path("z.npy"), "precious");
  EXPECT_ERROR(
      run({module, "--entry", "add", "--input", "x=" + path("x5.npy"),
           "--input", "y=" + path("y.npy"), "--output", "z=" + path("z.npy")}),
      1,
      "entry 'add': input 'x' has shape [5], expected [4] (from file " +
          path("x5.npy") + ")");
  auto y64 = Tensor::allocate(DType::F64, {4});
  ASSERT_TRUE(y64.ok());
  ASSERT_TRUE(writeSafeTensors(path("p.safetensors"), {{"y", &*y64}}).ok());
  EXPECT_ERROR(
      run({module, "--entry", "add", "--input", "x=" + path("x.npy"),
           "--params", path("p.safetensors")}),
      1,
      "entry 'add': input 'y' has dtype f64, expected f32 (from params " +
          path("p.safetensors") + " ('y'))");
  EXPECT_EQ(readBytes(path("z.npy")), "precious");

  ASSERT_TRUE(writeNpy(path("keep.npy"), makeI32({4}, {1, 1, 7, 1})).ok());
  EXPECT_ERROR(run({module, "--entry", "masked", "--input",
                    "x=" + path("x.npy"), "--input", "y=" + path("y.npy"),
                    "--input", "keep=" + path("keep.npy")}),
               1,
               "input 'keep' has value 7 at row 2, outside its range [0, 1]");

  writeBytes(path("bad.npy"), "this is not a numpy file");
  EXPECT_ERROR(run({module, "--entry", "add", "--input", "x=" + path("bad.npy"),
                    "--input", "y=" + path("y.npy")}),
               1, "bad magic");
}

TEST_F(HktRunTest, WritesInOutArgumentsBack) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module, {"step"});
  ASSERT_TRUE(writeNpy(path("p.npy"), makeF32({4}, {1, 2, 3, 4})).ok());
  ASSERT_TRUE(writeNpy(path("g.npy"), makeF32({4}, {2, 2, -2, 8})).ok());
  RunResult r = run({module, "--input", "p=" + path("p.npy"), "--input",
                     "g=" + path("g.npy"), "--output", "p=" + path("p1.npy"),
                     "--output", "s=" + path("s.npy")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readF32(path("p1.npy")), (std::vector<float>{0, 1, 4, 0}));
  EXPECT_EQ(readF32(path("s.npy")), (std::vector<float>{5}));
  EXPECT_TRUE(mentions(r.err, "arg p: f32 [4] from file " + path("p.npy") +
                                  " (in-out)"));
  EXPECT_TRUE(mentions(r.err, "wrote p (f32 [4]) to " + path("p1.npy")));
  // The input file itself is left alone.
  EXPECT_EQ(readF32(path("p.npy")), (std::vector<float>{1, 2, 3, 4}));
  // Every call updates p: with --bench 2, three steps in all.
  r = run({module, "--input", "p=" + path("p.npy"), "--input",
           "g=" + path("g.npy"), "--bench", "2", "--quiet", "--output",
           "p=" + path("p3.npy")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readF32(path("p3.npy")), (std::vector<float>{-2, -1, 6, -8}));
  // Inputs are not outputs.
  EXPECT_ERROR(run({module, "--input", "p=" + path("p.npy"), "--input",
                    "g=" + path("g.npy"), "--output", "g=" + path("g1.npy")}),
               1,
               "entry 'step' has no result or in-out argument 'g'; its "
               "results are: 's'; its in-out arguments: 'p'");
}

TEST_F(HktRunTest, SizesDynamicDimensionsFromTheInputs) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module, {"twice"});
  ASSERT_TRUE(
      writeNpy(path("x3.npy"), makeF32({3, 2}, {1, 2, 3, 4, 5, 6})).ok());
  RunResult r = run({module, "--input", "x=" + path("x3.npy"), "--output",
                     "y=" + path("y.npy")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto y = readNpy(path("y.npy"));
  ASSERT_TRUE(y.ok()) << y.message();
  EXPECT_EQ(y->shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(valuesF32(*y), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  EXPECT_TRUE(mentions(r.err, "arg x: f32 [3,2] from file"));
  // Random inputs take the bound.
  r = run({module, "--random", "1", "--output", "y=" + path("yr.npy")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto yr = readNpy(path("yr.npy"));
  ASSERT_TRUE(yr.ok()) << yr.message();
  EXPECT_EQ(yr->shape(), (std::vector<int64_t>{8, 2}));
  // Above the bound: named, with where the tensor came from.
  ASSERT_TRUE(
      writeNpy(path("x9.npy"), makeF32({9, 2}, std::vector<float>(18, 1)))
          .ok());
  EXPECT_ERROR(run({module, "--input", "x=" + path("x9.npy")}), 1,
               "entry 'twice': input 'x' has size 9 in dimension 0 ('B'), "
               "above its bound 8 (from file " +
                   path("x9.npy") + ")");
}

TEST_F(HktRunTest, RefusesAVersionOneModule) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module, {"add"});
  std::string v1 = tinyManifest({"add"});
  v1.replace(v1.find("\"version\": 2"), 12, "\"version\": 1");
  writeBytes(module + "/manifest.json", v1);
  EXPECT_ERROR(run({module, "--random", "1"}), 1,
               "has format version 1; this runtime reads version 2: "
               "recompile it with hkt-compile");
}

TEST_F(HktRunTest, ReportsUsageErrors) {
  RunResult r = run({});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_TRUE(mentions(r.err, "no module directory given"));
  EXPECT_TRUE(mentions(r.err, "usage: hkt-run OUT"));
  EXPECT_ERROR(run({module, "--input", "x.npy"}), 2,
               "--input expects NAME=FILE, got 'x.npy'");
  EXPECT_ERROR(run({module, "--output", "=z.npy"}), 2,
               "--output expects NAME=FILE");
  EXPECT_ERROR(run({module, "--frobnicate"}), 2,
               "unknown option '--frobnicate'");
  EXPECT_ERROR(run({module, "--random"}), 2, "--random needs a value");
  EXPECT_ERROR(run({module, "--random", "-3"}), 2,
               "--random expects a non-negative integer");
  EXPECT_ERROR(run({module, "--threads", "0"}), 2,
               "--threads expects an integer from 1");
  EXPECT_ERROR(run({module, "other"}), 2, "more than one module directory");
  EXPECT_ERROR(run({module, "--params-prefix", "m."}), 2,
               "--params-prefix needs --params");
  r = run({"--help"});
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_TRUE(mentions(r.out, "usage: hkt-run OUT"));
}

TEST_F(HktRunTest, ReportsAMissingModule) {
  EXPECT_ERROR(run({path("nowhere"), "--random", "1"}), 1,
               "cannot load module '" + path("nowhere") + "'");
}

TEST_F(HktRunTest, BenchmarksAndSetsThreads) {
  HKT_BUILD_TINY_MODULE_OR_SKIP(module);
  RunResult r = run({module, "--entry", "add", "--random", "1", "--threads",
                     "3", "--bench", "5", "--quiet"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(mentions(r.out, "{\"median_ms\":"));
  EXPECT_TRUE(mentions(r.out, ",\"n\":5,\"threads\":3}\n"));
  // An empty OMP_NUM_THREADS (which libomp aborts on) counts as unset.
  r = run({module, "--entry", "add", "--random", "1", "--bench", "1"},
          "OMP_NUM_THREADS=");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(mentions(r.out, ",\"n\":1,\"threads\":"));
  r = run({module, "--entry", "add", "--random", "1", "--bench", "1"},
          "OMP_NUM_THREADS=6");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(mentions(r.out, "\"threads\":6}"));
}

} // namespace
