//===- DeviceMemoryTest.cpp - Buffers kept on a module's device -----------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The host kind of DeviceMemory (an emulated GPU's "device" is the CPU):
// what goes up comes back, the copies are counted, a mismatched tensor is
// refused with a message, every buffer is freed with its tensor. The cuda
// kind is checked on the fake driver by test/Tools/nvvm-train.test.
//
//===----------------------------------------------------------------------===//

#include "runtime/DeviceMemory.h"
#include "test/Unit/TestUtil.h"

#include <gtest/gtest.h>

using namespace hkt::runtime;
using namespace hkt::test;

namespace {

TEST(DeviceMemoryTest, RoundTripIsCountedAndFreed) {
  auto memory = DeviceMemory::create(TargetKind::Cpu);
  ASSERT_TRUE(memory.ok()) << memory.message();
  DeviceMemory &m = **memory;
  EXPECT_FALSE(m.isCuda());
  {
    Tensor x = makeF32({2, 3}, {1, 2, 3, 4, 5, 6});
    auto d = m.upload(x);
    ASSERT_TRUE(d.ok()) << d.message();
    EXPECT_EQ(d->shape(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(d->byteSize(), 24u);
    EXPECT_EQ(m.liveBuffers(), 1);
    Tensor back = makeF32({2, 3}, {0, 0, 0, 0, 0, 0});
    ASSERT_TRUE(m.download(back, *d).ok());
    EXPECT_EQ(valuesF32(back), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    // A fresh buffer is zero.
    auto z = m.allocate(DType::F32, {3});
    ASSERT_TRUE(z.ok()) << z.message();
    Tensor zb = makeF32({3}, {7, 7, 7});
    ASSERT_TRUE(m.download(zb, *z).ok());
    EXPECT_EQ(valuesF32(zb), (std::vector<float>{0, 0, 0}));
    EXPECT_EQ(m.liveBuffers(), 2);
    // Moved, not copied: still two buffers.
    DeviceTensor moved = std::move(*d);
    EXPECT_EQ(m.liveBuffers(), 2);
  }
  EXPECT_EQ(m.liveBuffers(), 0);
  const DeviceTraffic &t = m.traffic();
  EXPECT_EQ(t.uploads, 1);
  EXPECT_EQ(t.downloads, 2);
  EXPECT_EQ(t.bytesUp, 24u);
  EXPECT_EQ(t.bytesDown, 36u);
}

TEST(DeviceMemoryTest, MismatchedTensorIsRefused) {
  auto memory = DeviceMemory::create(TargetKind::Cpu);
  ASSERT_TRUE(memory.ok()) << memory.message();
  auto d = (*memory)->allocate(DType::F32, {4});
  ASSERT_TRUE(d.ok()) << d.message();
  Tensor wrong = makeF32({2, 2}, {1, 2, 3, 4});
  Status s = (*memory)->upload(*d, wrong);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "cannot upload f32 [2,2]: the device tensor is f32 [4]");
  EXPECT_EQ((*memory)->traffic().uploads, 0);
}

// A batch narrower than the buffer (a dynamic length): the buffer takes
// its shape and only its bytes move; wider, or of another dtype, is refused.
TEST(DeviceMemoryTest, UploadReshapingKeepsTheBuffer) {
  auto memory = DeviceMemory::create(TargetKind::Cpu);
  ASSERT_TRUE(memory.ok()) << memory.message();
  DeviceMemory &m = **memory;
  auto d = m.allocate(DType::F32, {2, 4});
  ASSERT_TRUE(d.ok()) << d.message();
  void *buffer = d->data();
  Tensor narrow = makeF32({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(m.uploadReshaping(*d, narrow).ok());
  EXPECT_EQ(d->data(), buffer);
  EXPECT_EQ(d->shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(d->byteSize(), 24u);
  EXPECT_EQ(d->capacity(), 32u);
  EXPECT_EQ(m.traffic().bytesUp, 24u);
  Tensor back = makeF32({2, 3}, {0, 0, 0, 0, 0, 0});
  ASSERT_TRUE(m.download(back, *d).ok());
  EXPECT_EQ(valuesF32(back), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Back to the full width.
  Tensor full = makeF32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  ASSERT_TRUE(m.uploadReshaping(*d, full).ok());
  EXPECT_EQ(d->shape(), (std::vector<int64_t>{2, 4}));
  Tensor wide = makeF32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Status s = m.uploadReshaping(*d, wide);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "cannot upload f32 [3,3] into a device buffer of f32 and 32 bytes");
  EXPECT_EQ(d->shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(m.traffic().uploads, 2);
  EXPECT_EQ(m.liveBuffers(), 1);
}

TEST(DeviceMemoryTest, NegativeShapeIsRefused) {
  auto memory = DeviceMemory::create(TargetKind::Cpu);
  ASSERT_TRUE(memory.ok()) << memory.message();
  auto d = (*memory)->allocate(DType::F32, {-1});
  EXPECT_FALSE(d.ok());
  EXPECT_EQ((*memory)->liveBuffers(), 0);
}

} // namespace
