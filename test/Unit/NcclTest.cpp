//===- NcclTest.cpp - Tests of the runtime's NCCL all-reduce --------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The all-reduce of data-parallel GPU modules (runtime/Nccl.h). Its runs
// under mpirun, on the fake driver and a fake NCCL, are in
// test/Tools/nvvm-data-parallel.test; here what needs no job.
//
//===----------------------------------------------------------------------===//

#include "runtime/Nccl.h"
#include "runtime/CudaDriver.h"
#include "test/Unit/TestUtil.h"

#include <cstdlib>
#include <dlfcn.h>

using namespace hkt::runtime;
using namespace hkt::test;

namespace {

TEST(NcclTest, AllReduceOutsideACommunicatorIsAnError) {
  // A module's train step called without hkt-run train's communicator: the
  // call records an error (reported after the call), it never touches the
  // buffers.
  float send[4] = {1, 2, 3, 4}, recv[4] = {0, 0, 0, 0};
  takeCudaError();
  hktNcclAllReduceF32(send, send, 0, 4, 1, recv, recv, 0, 4, 1, /*sum*/ 0);
  EXPECT_TRUE(mentions(takeCudaError(),
                       "the module's NCCL all-reduce ran outside an NCCL "
                       "communicator"));
  EXPECT_EQ(recv[0], 0.0f);
  EXPECT_EQ(ncclWorldSize(), 0);
}

TEST(NcclTest, ResolvesTheToolkitsLibrary) {
  // The CUDA toolkit ships libnccl.so.2 (without a GPU, its version and
  // symbols are all the runtime can check): every function the runtime
  // calls resolves from it.
  if (std::getenv("HKT_NCCL"))
    GTEST_SKIP() << "HKT_NCCL names another library";
  void *lib = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!lib)
    lib = ::dlopen("libnccl.so.2", RTLD_LAZY | RTLD_LOCAL);
  if (!lib)
    GTEST_SKIP() << "no libnccl.so.2 on the loader's path (the CUDA toolkit's "
                    "lib/ registered with ldconfig provides it)";
  Expected<std::string> version = ncclVersion();
  ASSERT_TRUE(version.ok()) << version.message();
  EXPECT_TRUE(mentions(*version, "NCCL 2.")) << *version;
}

} // namespace
