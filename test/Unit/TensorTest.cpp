//===- TensorTest.cpp - Tests of Tensor and its fills ---------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/Tensor.h"
#include "test/Unit/TestUtil.h"

#include <cstring>

using namespace hkt::runtime;
using namespace hkt::test;

namespace {

TEST(TensorTest, AllocatesAlignedZeroedBuffers) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{}, {0}, {3}, {2, 5, 7}}) {
    auto t = Tensor::allocate(DType::F64, shape);
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_NE(t->data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data()) % kTensorAlignment, 0u);
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    EXPECT_EQ(t->numElements(), n);
    EXPECT_EQ(t->byteSize(), static_cast<size_t>(n) * 8);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(t->dataAs<double>()[i], 0.0);
  }
  auto t = Tensor::allocate(DType::I32, {2, 3, 4});
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(t->describe(), "i32 [2,3,4]");
}

TEST(TensorTest, RefusesBadShapes) {
  auto neg = Tensor::allocate(DType::F32, {2, -1});
  ASSERT_FALSE(neg.ok());
  EXPECT_TRUE(mentions(neg.message(), "invalid tensor shape [2,-1]"));
  auto huge =
      Tensor::allocate(DType::F32, {int64_t(1) << 40, int64_t(1) << 40});
  EXPECT_FALSE(huge.ok());
}

// A borrowed buffer (the C API's zero-copy view) is the caller's: the
// tensor reads and writes it in place and never frees it.
TEST(TensorTest, BorrowedBufferIsTheCallers) {
  std::vector<float> storage = {1, 2, 3, 4, 5, 6};
  {
    auto t = Tensor::borrow(DType::F32, {2, 3}, storage.data());
    ASSERT_TRUE(t.ok()) << t.message();
    EXPECT_EQ(t->data(), storage.data());
    EXPECT_EQ(t->describe(), "f32 [2,3]");
    t->dataAs<float>()[4] = 50;
    Tensor moved = std::move(*t);
    EXPECT_EQ(moved.data(), storage.data());
  } // freeing the caller's vector here would crash under ASan
  EXPECT_EQ(storage[4], 50);
  auto empty = Tensor::borrow(DType::I32, {0, 3}, nullptr);
  ASSERT_TRUE(empty.ok()) << empty.message();
  EXPECT_NE(empty->data(), nullptr);
  auto none = Tensor::borrow(DType::F32, {2}, nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.message(), "a f32 [2] tensor has no data");
  EXPECT_FALSE(Tensor::borrow(DType::F32, {-1}, storage.data()).ok());
}

TEST(TensorTest, DTypeNames) {
  EXPECT_EQ(parseDTypeName("i64"), DType::I64);
  EXPECT_EQ(parseDTypeName("bf16"), std::nullopt);
  EXPECT_STREQ(dtypeNumpyCode(DType::F64), "<f8");
  EXPECT_STREQ(dtypeSafeTensorsName(DType::I32), "I32");
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_TRUE(isIntegerDType(DType::I32));
  EXPECT_FALSE(isIntegerDType(DType::F32));
}

TEST(TensorTest, RandomFillIsDeterministicAndInRange) {
  auto a = Tensor::allocate(DType::F32, {1000});
  auto b = Tensor::allocate(DType::F32, {1000});
  auto c = Tensor::allocate(DType::F32, {1000});
  fillRandom(*a, 7, "x");
  fillRandom(*b, 7, "x");
  fillRandom(*c, 7, "y");
  EXPECT_EQ(std::memcmp(a->data(), b->data(), a->byteSize()), 0);
  EXPECT_NE(std::memcmp(a->data(), c->data(), a->byteSize()), 0)
      << "different streams must give different values";
  float lo = 1, hi = -1;
  for (float v : valuesF32(*a)) {
    EXPECT_GE(v, -0.5f);
    EXPECT_LT(v, 0.5f);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_LT(lo, -0.4f);
  EXPECT_GT(hi, 0.4f);

  auto i = Tensor::allocate(DType::I32, {1000});
  fillRandom(*i, 1, "lengths", std::pair<int64_t, int64_t>{3, 5});
  std::set<int64_t> seen;
  for (int64_t k = 0; k < 1000; ++k)
    seen.insert(i->elementAsInt(k));
  EXPECT_EQ(seen, (std::set<int64_t>{3, 4, 5}));
  auto j = Tensor::allocate(DType::I64, {1000});
  fillRandom(*j, 1, "n");
  seen.clear();
  for (int64_t k = 0; k < 1000; ++k)
    seen.insert(j->elementAsInt(k));
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), 9);
}

TEST(TensorTest, ConstantFills) {
  auto f = Tensor::allocate(DType::F64, {3});
  fillConstant(*f, 0.25);
  EXPECT_EQ(f->elementAsDouble(2), 0.25);
  auto i = Tensor::allocate(DType::I64, {3});
  fillConstantInt(*i, (int64_t(1) << 60) + 1);
  EXPECT_EQ(i->elementAsInt(1), (int64_t(1) << 60) + 1);
}

} // namespace
