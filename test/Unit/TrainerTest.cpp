//===- TrainerTest.cpp - Tests of the training library's state ------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The parts of runtime/train/Trainer.h that need no compiled model: the
// state a checkpoint saves, the learning-rate schedules, the data order.
// The loop itself runs on compiled models in test/Tools/train.test.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

using namespace hkt::train;

namespace {

TrainingState someState() {
  TrainingState st;
  st.task = "listops:train=64";
  st.seed = 7;
  st.dataSeed = 3;
  st.batch = 5;
  st.step = 12;
  st.examplesSeen = 60;
  st.lr = 0.1 / 3; // not exact in decimal: the metadata must round-trip it
  st.weightDecay = 0.02;
  st.beta1 = 0.85;
  st.beta2 = 0.995;
  st.eps = 1e-7;
  st.warmup = 4;
  st.schedule = "cosine";
  st.decaySteps = 40;
  return st;
}

TEST(TrainingStateTest, MetadataRoundTripsExactly) {
  TrainingState st = someState();
  auto back = TrainingState::fromMetadata(st.metadata(), "c.safetensors");
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->task, st.task);
  EXPECT_EQ(back->seed, st.seed);
  EXPECT_EQ(back->dataSeed, st.dataSeed);
  EXPECT_EQ(back->batch, st.batch);
  EXPECT_EQ(back->step, st.step);
  EXPECT_EQ(back->examplesSeen, st.examplesSeen);
  EXPECT_EQ(back->lr, st.lr);
  EXPECT_EQ(back->weightDecay, st.weightDecay);
  EXPECT_EQ(back->beta1, st.beta1);
  EXPECT_EQ(back->beta2, st.beta2);
  EXPECT_EQ(back->eps, st.eps);
  EXPECT_EQ(back->warmup, st.warmup);
  EXPECT_EQ(back->schedule, st.schedule);
  EXPECT_EQ(back->decaySteps, st.decaySteps);
}

TEST(TrainingStateTest, BadMetadataIsNamed) {
  auto meta = someState().metadata();
  meta.erase("examples_seen");
  auto missing = TrainingState::fromMetadata(meta, "w.safetensors");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.message(), "'w.safetensors' has no 'examples_seen' in its "
                               "metadata: not a training checkpoint");
  meta = someState().metadata();
  meta["lr"] = "fast";
  auto notANumber = TrainingState::fromMetadata(meta, "c");
  ASSERT_FALSE(notANumber.ok());
  EXPECT_EQ(notANumber.message(),
            "'c': metadata 'lr' = 'fast' is not a number");
  meta = someState().metadata();
  meta["step"] = "-3";
  EXPECT_FALSE(TrainingState::fromMetadata(meta, "c").ok());
  meta = someState().metadata();
  meta["schedule"] = "exponential";
  auto schedule = TrainingState::fromMetadata(meta, "c");
  ASSERT_FALSE(schedule.ok());
  EXPECT_NE(schedule.message().find("'exponential'"), std::string::npos);
}

TEST(TrainingStateTest, SchedulesWarmUpThenDecay) {
  TrainingState st;
  st.lr = 0.5;
  st.warmup = 10;
  st.decaySteps = 110;
  EXPECT_DOUBLE_EQ(st.learningRate(1), 0.05);
  EXPECT_DOUBLE_EQ(st.learningRate(10), 0.5);
  EXPECT_DOUBLE_EQ(st.learningRate(60), 0.5); // constant
  st.schedule = "linear";
  EXPECT_DOUBLE_EQ(st.learningRate(60), 0.25);
  EXPECT_DOUBLE_EQ(st.learningRate(110), 0.0);
  EXPECT_DOUBLE_EQ(st.learningRate(500), 0.0); // past the end: stays 0
  st.schedule = "cosine";
  EXPECT_NEAR(st.learningRate(35), 0.5 * 0.5 * (1 + std::cos(M_PI / 4)), 1e-15);
  EXPECT_NEAR(st.learningRate(60), 0.25, 1e-15);
}

TEST(DataOrderTest, EachEpochIsAPermutationFixedBySeed) {
  DataOrder a(17, 5), b(17, 5), c(17, 6);
  std::vector<int64_t> first, second, other;
  for (int64_t p = 0; p < 17; ++p) {
    first.push_back(a.at(p));
    other.push_back(c.at(p));
  }
  for (int64_t p = 17; p < 34; ++p)
    second.push_back(a.at(p));
  EXPECT_EQ(std::set<int64_t>(first.begin(), first.end()).size(), 17u);
  EXPECT_EQ(std::set<int64_t>(second.begin(), second.end()).size(), 17u);
  EXPECT_NE(first, second); // a new order per epoch
  EXPECT_NE(first, other);  // the seed decides it
  // Positions can be asked for in any order (resuming mid-epoch).
  EXPECT_EQ(b.at(20), second[3]);
  EXPECT_EQ(b.at(2), first[2]);
}

} // namespace

TEST(RankShareTest, SharesCoverTheBatchInOrderOnce) {
  // Every row of a batch to exactly one rank, consecutive ranks taking
  // consecutive rows (the order one process takes them), shares differing
  // by one row at most.
  for (int64_t ranks = 1; ranks <= 5; ++ranks)
    for (int64_t rows = ranks; rows <= 23; ++rows) {
      int64_t next = 0, smallest = rows, largest = 0;
      for (int64_t r = 0; r < ranks; ++r) {
        RankShare share{r, ranks};
        EXPECT_EQ(share.begin(rows), next) << rows << " rows, rank " << r;
        int64_t n = share.end(rows) - share.begin(rows);
        smallest = std::min(smallest, n);
        largest = std::max(largest, n);
        next = share.end(rows);
      }
      EXPECT_EQ(next, rows);
      EXPECT_GE(smallest, 1);
      EXPECT_LE(largest - smallest, 1);
    }
  RankShare third{2, 3};
  EXPECT_EQ(third.begin(7), 4);
  EXPECT_EQ(third.end(7), 7);
}
