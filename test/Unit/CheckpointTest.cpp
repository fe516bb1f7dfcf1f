//===- CheckpointTest.cpp - Tests of training checkpoints -----------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Checkpoint.h"
#include "test/Unit/TestUtil.h"

using namespace hkt::runtime;
using namespace hkt::train;
using namespace hkt::test;

namespace {

class CheckpointTest : public TempDirTest {};

const char *kModel = R"({"classes":10,"dim":16,"heads":2,"vocab":20})";

TEST_F(CheckpointTest, RoundTripKeepsTensorsAndMetadata) {
  Tensor w = makeF32({2, 2}, {1, 2, 3, 4});
  Tensor m = makeF32({2}, {-1, 0.5});
  std::string file = path("c.safetensors");
  ASSERT_TRUE(
      writeCheckpoint(file, {{"w", &w}, {"adam.m.w", &m}},
                      {{checkpoint::kModel, kModel}, {checkpoint::kStep, "12"}})
          .ok());
  Expected<Checkpoint> c = readCheckpoint(file);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->meta(checkpoint::kFormat), checkpoint::kFormatName);
  EXPECT_EQ(c->meta(checkpoint::kStep), "12");
  EXPECT_EQ(c->meta("absent"), "");
  ASSERT_NE(c->find("adam.m.w"), nullptr);
  EXPECT_EQ(c->find("adam.m.w")->dataAs<float>()[0], -1.0f);
  ASSERT_NE(c->find("w"), nullptr);
  EXPECT_EQ(c->find("w")->shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(c->find("w")->dataAs<float>()[3], 4.0f);
  EXPECT_EQ(c->find("nothing"), nullptr);
}

TEST_F(CheckpointTest, RefusesAnotherFormat) {
  Tensor w = makeF32({1}, {1});
  std::string file = path("other.safetensors");
  ASSERT_TRUE(writeSafeTensors(file, {{"w", &w}}, {{"format", "pt"}}).ok());
  Expected<Checkpoint> c = readCheckpoint(file);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(mentions(c.message(), "unknown checkpoint format 'pt'"))
      << c.message();
}

TEST_F(CheckpointTest, ReadsPlainWeightFiles) {
  Tensor w = makeF32({1}, {1});
  std::string file = path("plain.safetensors");
  ASSERT_TRUE(writeSafeTensors(file, {{"w", &w}}).ok());
  Expected<Checkpoint> c = readCheckpoint(file);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_NE(c->find("w"), nullptr);
  EXPECT_TRUE(c->metadata.empty());
}

TEST(CheckpointNames, TellOptimizerStateAndCheckpointsApart) {
  EXPECT_TRUE(isOptimizerState("adam.m.embed"));
  EXPECT_TRUE(isOptimizerState("adam.v.layers.0.attn.wq"));
  EXPECT_FALSE(isOptimizerState("embed"));
  EXPECT_FALSE(isOptimizerState("adam.embed"));
  EXPECT_FALSE(isOptimizerState("layers.0.adam.m.w"));
  EXPECT_TRUE(isCheckpointMetadata({{checkpoint::kFormat, "hkt-checkpoint"}}));
  EXPECT_FALSE(isCheckpointMetadata({}));
  EXPECT_FALSE(isCheckpointMetadata({{checkpoint::kFormat, "pt"}}));
}

TEST(CheckpointConfig, SameConfigPasses) {
  EXPECT_TRUE(checkModelConfig(kModel, "c", kModel, "m").ok());
  // Key order does not matter.
  EXPECT_TRUE(
      checkModelConfig(R"({"vocab":20,"heads":2,"dim":16,"classes":10})", "c",
                       kModel, "m")
          .ok());
  // A file without a config (another tool's weights) passes.
  EXPECT_TRUE(checkModelConfig("", "c", kModel, "m").ok());
}

TEST(CheckpointConfig, NamesTheKeyThatDiffers) {
  Status s = checkModelConfig(R"({"classes":10,"dim":8,"heads":2,"vocab":20})",
                              "c.safetensors", kModel, "mod");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "checkpoint 'c.safetensors' is for a model with dim "
                         "8; the module 'mod' has dim 16: use a checkpoint "
                         "of this model");
  s = checkModelConfig(R"({"classes":10,"heads":2,"vocab":20})", "c", kModel,
                       "m");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(mentions(s.message(), "with dim nothing")) << s.message();
  s = checkModelConfig(
      R"({"classes":10,"dim":16,"heads":2,"vocab":20,"extra":1})", "c", kModel,
      "m");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(mentions(s.message(), "has the model key 'extra'"))
      << s.message();
  s = checkModelConfig("[1]", "c", kModel, "m");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(mentions(s.message(), "not a JSON object")) << s.message();
  s = checkModelConfig(kModel, "c", "", "m");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(mentions(s.message(), "records no model config")) << s.message();
}

} // namespace
