//===- CudaDriverTest.cpp - The CUDA loader, against a fake driver --------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// These machines have no GPU and no driver, so the loader (CudaDriver.cpp,
// CudaRuntimeWrappers.cpp) runs here against a fake libcuda built at test
// time (HKT_CUDA_DRIVER points the runtime at it), and a fake cuda module
// whose host code calls the mgpu* functions as MLIR's lowered host code does.
// Each case is one hkt-run process (the driver is opened once per process).
//
//===----------------------------------------------------------------------===//

#include "runtime/Npy.h"
#include "test/Unit/TestUtil.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace hkt::runtime;
using namespace hkt::test;

namespace {

/// The fake driver (test/Unit/Inputs/fake_libcuda.c): FAKE_CUDA_MODE =
/// nodevice | sm80 | sm90 | launchfail | badimage. It counts live
/// allocations and reports them at exit.
std::string fakeDriverSource() {
  std::ifstream in(HKT_FAKE_CUDA_SOURCE);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A driver that lacks most functions.
const char *kTooOldDriver = "int cuInit(unsigned f) { return 0; }\n";

/// A cuda module's host code as MLIR lowers it: the constructor loads the
/// kernels; the entry allocates a device buffer, copies x to it, launches,
/// copies back and frees it (y = x + 1, the fake kernel's work done on the
/// host). The "leaky" entry never frees its buffer (what a launch that
/// aborts the host code half way would leave).
const char *kFakeModule = R"(
#include <stdint.h>
#include <stddef.h>
void *mgpuModuleLoad(void *, size_t);
void *mgpuModuleGetFunction(void *, const char *);
void mgpuLaunchKernel(void *, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t,
                      intptr_t, int32_t, void *, void **, void **, size_t);
void *mgpuMemAlloc(uint64_t, void *, _Bool);
void mgpuMemFree(void *, void *);
void mgpuMemcpy(void *, void *, size_t, void *);
void *mgpuStreamCreate(void);
void mgpuStreamSynchronize(void *);
void mgpuStreamDestroy(void *);
static void *module;
static const char image[] = "fake cubin";
__attribute__((constructor)) static void load(void) {
  module = mgpuModuleLoad((void *)image, sizeof image);
}
typedef struct { float *allocated, *aligned; int64_t offset, size, stride; } D1;
static void run(void **args, int leak) {
  D1 *x = (D1 *)args[0], *y = (D1 *)args[1];
  void *s = mgpuStreamCreate();
  float *buf = (float *)mgpuMemAlloc(4 * sizeof(float), s, 0);
  if (buf)
    mgpuMemcpy(buf, x->aligned, 4 * sizeof(float), s);
  void *k = mgpuModuleGetFunction(module, "add_one");
  void *params[] = {&buf};
  mgpuLaunchKernel(k, 1, 1, 1, 4, 1, 1, 0, s, params, 0, 1);
  mgpuStreamSynchronize(s);
  if (buf) {
    for (int i = 0; i < 4; ++i) buf[i] += 1;  /* the fake kernel */
    mgpuMemcpy(y->aligned, buf, 4 * sizeof(float), s);
  }
  if (!leak)
    mgpuMemFree(buf, s);
  mgpuStreamDestroy(s);
}
void _hkt_packed_f(void **args) { run(args, 0); }
void _hkt_packed_leaky(void **args) { run(args, 1); }
)";

std::string cudaManifest(const std::string &arch) {
  auto entry = [](const std::string &name) {
    return "{\"name\": \"" + name + "\", \"symbol\": \"_hkt_packed_" + name +
           "\", \"args\": [{\"name\": \"x\", \"role\": \"input\", \"dtype\": "
           "\"f32\", \"shape\": [4]}], \"results\": [{\"name\": \"y\", "
           "\"role\": \"output\", \"dtype\": \"f32\", \"shape\": [4]}]}";
  };
  return "{\"format\": \"hkt-module\", \"version\": 2, \"library\": "
         "\"module.so\", \"target\": {\"kind\": \"cuda\", \"triple\": "
         "\"x86_64-unknown-linux-gnu\", \"cpu\": \"x86-64\", \"features\": "
         "[\"sse2\"], \"arch\": \"" +
         arch + "\"}, \"entries\": [" + entry("f") + ", " + entry("leaky") +
         "]}";
}

struct RunResult {
  int exitCode = -1;
  std::string err;
};

class CudaDriverTest : public TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    std::string cc = HKT_TEST_CC;
    if (cc.empty() || cc.find("NOTFOUND") != std::string::npos ||
        ::access(cc.c_str(), X_OK) != 0)
      GTEST_SKIP() << "no C compiler (cc) found to build the fake driver";
    ASSERT_TRUE(compile(cc, fakeDriverSource(), path("libcuda-fake.so")));
    ASSERT_TRUE(compile(cc, kTooOldDriver, path("libcuda-old.so")));
    for (const char *arch : {"sm_90", "sm_80"}) {
      std::string dir = path(std::string("mod-") + arch);
      ASSERT_EQ(::mkdir(dir.c_str(), 0777), 0);
      ASSERT_TRUE(compile(cc, kFakeModule, dir + "/module.so"));
      std::ofstream(dir + "/manifest.json") << cudaManifest(arch);
    }
    ASSERT_TRUE(writeNpy(path("x.npy"), makeF32({4}, {1, 2, 3, 4})).ok());
  }

  bool compile(const std::string &cc, const std::string &source,
               const std::string &out) {
    std::string src = out + ".c";
    std::ofstream(src) << source;
    std::string cmd = "'" + cc + "' -shared -fPIC -O1 -o '" + out + "' '" +
                      src + "' 2>'" + out + ".log'";
    bool ok = std::system(cmd.c_str()) == 0;
    if (!ok)
      ADD_FAILURE() << "cc failed: " << readBytes(out + ".log");
    return ok;
  }

  /// hkt-run on a module's entry with the given driver and fake mode.
  RunResult run(const std::string &driver, const std::string &mode,
                const std::string &arch = "sm_90",
                const std::string &entry = "f") {
    std::string cmd = "HKT_CUDA_DRIVER='" + driver + "' FAKE_CUDA_MODE=" +
                      mode + " '" HKT_RUN_PATH "' '" + path("mod-" + arch) +
                      "' --entry " + entry + " --input x='" + path("x.npy") +
                      "' --output y='" + path("y.npy") + "' 2>'" +
                      path("stderr") + "'";
    RunResult r;
    int status = std::system(cmd.c_str());
    r.exitCode =
        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.err = readBytes(path("stderr"));
    return r;
  }
};

TEST_F(CudaDriverTest, NoDriverLibrary) {
  RunResult r = run(path("no-such-libcuda.so"), "sm90");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_TRUE(mentions(r.err, "(it targets cuda, sm_90): no CUDA driver: "
                              "cannot load " +
                                  path("no-such-libcuda.so")));
  EXPECT_FALSE(fileExists(path("y.npy")));
}

TEST_F(CudaDriverTest, DriverWithoutTheApi) {
  RunResult r = run(path("libcuda-old.so"), "sm90");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_TRUE(mentions(r.err, "no CUDA driver: '" + path("libcuda-old.so") +
                                  "' has no function cuDriverGetVersion"));
}

TEST_F(CudaDriverTest, NoDevice) {
  RunResult r = run(path("libcuda-fake.so"), "nodevice");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_TRUE(mentions(r.err, "no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE "
                              "(no CUDA-capable device is detected)"));
}

TEST_F(CudaDriverTest, ArchitectureMismatch) {
  RunResult r = run(path("libcuda-fake.so"), "sm80");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_TRUE(mentions(r.err, "module built for sm_90, device is sm_80 (Fake "
                              "A100): recompile with hkt-compile --target "
                              "nvvm --chip sm_80"));
  // An sm_80 module runs on an sm_90 device's driver only if it is sm_9x:
  // the cubin rule is the same major version.
  r = run(path("libcuda-fake.so"), "sm90", "sm_80");
  EXPECT_TRUE(mentions(r.err, "module built for sm_80, device is sm_90"));
}

TEST_F(CudaDriverTest, RunsThroughTheMgpuFunctions) {
  RunResult r = run(path("libcuda-fake.so"), "sm90");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto y = readNpy(path("y.npy"));
  ASSERT_TRUE(y.ok()) << y.message();
  EXPECT_EQ(valuesF32(*y), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_TRUE(mentions(r.err, "fake-cuda: 0 allocations outstanding"));
}

TEST_F(CudaDriverTest, KernelImageThatDoesNotLoad) {
  RunResult r = run(path("libcuda-fake.so"), "badimage");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_TRUE(mentions(r.err, "its kernels did not load: cuModuleLoadData: "
                              "CUDA_ERROR_INVALID_IMAGE"));
}

TEST_F(CudaDriverTest, FailedLaunchIsReportedAndItsMemoryFreed) {
  RunResult r = run(path("libcuda-fake.so"), "launchfail", "sm_90", "leaky");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_TRUE(mentions(r.err, "entry 'leaky' failed on the device: "
                              "cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED "
                              "(unspecified launch failure); freed 1 device "
                              "buffers it left"));
  EXPECT_TRUE(mentions(r.err, "fake-cuda: 0 allocations outstanding"));
  EXPECT_FALSE(fileExists(path("y.npy")));
}

} // namespace
