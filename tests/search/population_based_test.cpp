#include "search/population_based.hpp"

#include <cmath>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace hpo::search {
namespace {

PbtConfig config(int population, double interval, double max) {
  PbtConfig c;
  c.population = population;
  c.interval = interval;
  c.max_budget = max;
  c.quantile = 0.25;
  c.seed = 3;
  return c;
}

MemberRun done(std::int64_t number, int member, int generation, double value,
               std::int64_t from = -1, std::int64_t exploited = -1) {
  MemberRun r{number, member, generation, from, exploited, true, value, {}};
  r.params = {{"lr", 0.1 * (member + 1)}};
  return r;
}

const auto kAll = [](std::int64_t) { return true; };
const auto kNone = [](std::int64_t) { return false; };

TEST(PopulationSchedule, IntervalsUpToTheMaximum) {
  PopulationSchedule p(config(4, 3, 10));
  EXPECT_EQ(p.generations(), 4);
  EXPECT_EQ(p.budget(0), 3);
  EXPECT_EQ(p.budget(2), 9);
  EXPECT_EQ(p.budget(3), 10);  // the last interval is shorter
}

TEST(PopulationSchedule, FirstEveryMemberThenEachGoesOnFromItsOwnCheckpoint) {
  PopulationSchedule p(config(4, 2, 6));
  std::vector<MemberRun> runs;
  for (int m = 0; m < 4; ++m) {
    auto job = p.next(runs, kAll, m);
    ASSERT_TRUE(job);
    EXPECT_EQ(job->member, m);
    EXPECT_EQ(job->generation, 0);
    EXPECT_EQ(job->resume, -1);
    runs.push_back({m, m, 0, -1, -1, false, std::nullopt, {}});
  }
  EXPECT_FALSE(p.next(runs, kAll, 4));  // all four are training
  EXPECT_FALSE(p.done(runs));
  // Member 2 ends its interval in the middle of the ranking: it goes on.
  runs[2] = done(2, 2, 0, 1.0);
  auto job = p.next(runs, kAll, 4);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->member, 2);
  EXPECT_EQ(job->generation, 1);
  EXPECT_EQ(job->budget, 4);
  EXPECT_EQ(job->resume, 2);
  EXPECT_EQ(job->exploit, -1);
}

TEST(PopulationSchedule, TheBottomQuantileExploitsATopMemberWithACheckpoint) {
  PopulationSchedule p(config(4, 2, 6));
  std::vector<MemberRun> runs = {done(0, 0, 0, 0.1), done(1, 1, 0, 0.5), done(2, 2, 0, 0.7)};
  runs.push_back({3, 3, 0, -1, -1, false, std::nullopt, {}});
  // Member 0 is on top: it goes on by itself.
  runs.push_back({4, 0, 1, 0, -1, false, std::nullopt, {}});
  // Member 2 is last of the three ranked (k = max(1, floor(0.25 * 3)) = 1): it takes 0's.
  runs.push_back({5, 1, 1, 1, -1, false, std::nullopt, {}});
  auto job = p.next(runs, kAll, 6);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->member, 2);
  EXPECT_EQ(job->resume, 0);
  EXPECT_EQ(job->exploit, 0);
  EXPECT_EQ(job->generation, 1);
  // Had 0 stored no checkpoint, 2 would go on from its own.
  job = p.next(runs, kNone, 6);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->member, 2);
  EXPECT_EQ(job->resume, 2);
  EXPECT_EQ(job->exploit, -1);
}

// The ranking is among the members' same interval: a member far along is
// not compared with one that has trained less, and its donor's checkpoint is
// from that interval even when the donor has gone on since.
TEST(PopulationSchedule, MembersAreRankedAtTheSameInterval) {
  PopulationSchedule p(config(4, 2, 10));
  // Interval 0: member 1 was the worst.
  std::vector<MemberRun> runs = {done(0, 0, 0, 0.1), done(1, 1, 0, 0.9), done(2, 2, 0, 0.5),
                                 done(3, 3, 0, 0.6)};
  // Members 0, 2 and 3 went on; 0 and 2 finished interval 1 and train interval 2.
  runs.push_back(done(4, 0, 1, 0.05, 0));
  runs.push_back(done(5, 2, 1, 0.3, 2));
  runs.push_back({6, 3, 1, 3, -1, false, std::nullopt, {}});
  runs.push_back({7, 0, 2, 4, -1, false, std::nullopt, {}});
  runs.push_back({8, 2, 2, 5, -1, false, std::nullopt, {}});
  // Member 1 ended interval 1 at 0.2: worse than 0's 0.05, better than 2's
  // 0.3 at interval 1 (and than anyone's interval 0): not the bottom there.
  runs.push_back(done(9, 1, 1, 0.2, 1));
  auto job = p.next(runs, kAll, 10);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->member, 1);
  EXPECT_EQ(job->exploit, -1);
  EXPECT_EQ(job->resume, 9);
  EXPECT_EQ(job->generation, 2);
  // At 0.4 it is the bottom of interval 1: it takes member 0's interval-1
  // checkpoint (trial 4), though member 0 is training interval 2 by now.
  runs.back().value = 0.4;
  job = p.next(runs, kAll, 10);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->member, 1);
  EXPECT_EQ(job->exploit, 4);
  EXPECT_EQ(job->resume, 4);
  EXPECT_EQ(job->generation, 2);
}

// Intervals that take the same time, handed out in member order, end in
// member order: member 0 always gets to an interval first. Whichever member
// is the worst, it is exploited (ranked against the population at comparable
// budgets, not only against those that reached its interval before it).
TEST(PopulationSchedule, EveryMemberCanBeExploitedWhenMembersFinishInAFixedOrder) {
  for (int worst = 0; worst < 4; ++worst) {
    PopulationSchedule p(config(4, 1, 6));
    std::vector<MemberRun> runs;
    std::vector<std::int64_t> training;  // trial numbers, in the order they started
    std::vector<int> exploited(4, 0);
    // A member's quality travels with its parameters (an exploit copies the donor's).
    auto quality = [](const Params& params) { return std::get<double>(params.at("q")); };
    auto hand_out = [&] {
      for (;;) {
        const auto number = static_cast<std::int64_t>(runs.size());
        auto job = p.next(runs, kAll, number);
        if (!job) return;
        MemberRun r{number,       job->member, job->generation, job->resume,
                    job->exploit, false,       std::nullopt,    {}};
        if (job->resume < 0)
          r.params = {{"q", job->member == worst ? 3.0 : 1.0 + 0.1 * job->member}};
        else
          r.params = runs[static_cast<std::size_t>(job->resume)].params;
        if (job->exploit >= 0) ++exploited[static_cast<std::size_t>(job->member)];
        training.push_back(number);
        runs.push_back(r);
      }
    };
    hand_out();
    while (!training.empty()) {  // the oldest ends first
      MemberRun& r = runs[static_cast<std::size_t>(training.front())];
      training.erase(training.begin());
      r.finished = true;
      r.value = quality(r.params) * std::pow(0.9, p.budget(r.generation));
      hand_out();
    }
    EXPECT_TRUE(p.done(runs));
    EXPECT_EQ(runs.size(), 24u) << "one trial per member and interval";
    EXPECT_GE(exploited[static_cast<std::size_t>(worst)], 1) << "member " << worst;
  }
}

// A member that gets to interval g first is ranked by where it stood at its
// peers' latest interval: behind them there, it takes a donor's checkpoint of
// that interval and trains from it to its own next budget.
TEST(PopulationSchedule, TheFirstToGetThereIsRankedAtItsPeersLatestInterval) {
  PopulationSchedule p(config(4, 2, 10));
  // Interval 0: member 0 the worst. Member 0 then ends interval 1 before anyone else.
  std::vector<MemberRun> runs = {done(0, 0, 0, 0.9), done(1, 1, 0, 0.1), done(2, 2, 0, 0.5),
                                 done(3, 3, 0, 0.6)};
  runs.push_back({4, 1, 1, 1, -1, false, std::nullopt, {}});
  runs.push_back({5, 2, 1, 2, -1, false, std::nullopt, {}});
  runs.push_back({6, 3, 1, 3, -1, false, std::nullopt, {}});
  runs.push_back(done(7, 0, 1, 0.05, 0));  // better than anyone's interval 0
  auto job = p.next(runs, kAll, 8);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->member, 0);
  EXPECT_EQ(job->exploit, 1);  // member 1's interval-0 checkpoint
  EXPECT_EQ(job->resume, 1);
  EXPECT_EQ(job->generation, 2);
  EXPECT_EQ(job->budget, 6);
}

// A member stopped by a failure is ranked no more (its old scores would
// stand against every later interval), and an interval whose value is no
// number ranks below every other.
TEST(PopulationSchedule, AStoppedMemberIsNotRankedAndADivergedOneIsTheWorst) {
  PopulationSchedule p(config(4, 1, 10));
  std::vector<MemberRun> runs = {done(0, 0, 0, 0.5), done(1, 1, 0, 0.4), done(2, 2, 0, 0.3),
                                 done(3, 3, 0, 0.2)};
  runs.push_back({4, 3, 1, 3, -1, true, std::nullopt, {}});  // member 3 failed for good
  runs.push_back(done(5, 1, 1, 0.35, 1));
  runs.push_back(done(6, 2, 1, 0.25, 2));
  runs.push_back(done(7, 0, 1, 0.45, 0));
  auto job = p.next(runs, kAll, 8);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->member, 0);
  EXPECT_EQ(job->exploit, 6);  // member 2's interval 1, not member 3's interval 0
  EXPECT_EQ(job->generation, 2);
  runs.back().value = std::nan("");
  job = p.next(runs, kAll, 8);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->member, 0);
  EXPECT_EQ(job->exploit, 6);
}

TEST(PopulationSchedule, DoneWhenEveryMemberFinishedItsLastIntervalOrFailed) {
  PopulationSchedule p(config(2, 5, 10));
  std::vector<MemberRun> runs = {done(0, 0, 0, 1.0), done(1, 1, 0, 2.0), done(2, 0, 1, 0.5, 0)};
  EXPECT_FALSE(p.done(runs));
  runs.push_back({3, 1, 1, 1, -1, true, std::nullopt, {}});  // failed for good
  EXPECT_TRUE(p.done(runs));
  EXPECT_FALSE(p.next(runs, kAll, 4));
}

TEST(PopulationSchedule, ExploreResamplesOrScalesOnlyTheMutableParameters) {
  SearchSpace space;
  ParamSpec lr;
  lr.name = "lr";
  lr.min = 1e-4;
  lr.max = 1;
  lr.log = true;
  ParamSpec layers;
  layers.name = "layers";
  layers.type = ParamType::kInt;
  layers.min = 1;
  layers.max = 8;
  space.params = {lr, layers};
  PbtConfig c = config(4, 1, 4);
  c.mutable_params = {"lr"};
  c.resample_probability = 0;
  PopulationSchedule p(c);
  const Params donor{{"lr", 0.01}, {"layers", std::int64_t{4}}};
  std::set<double> seen;
  for (std::int64_t key = 0; key < 40; ++key) {
    Params out = p.explore(space, donor, key);
    EXPECT_EQ(out.at("layers"), donor.at("layers"));
    const double v = *as_double(out.at("lr"));
    EXPECT_TRUE(std::abs(v - 0.012) < 1e-9 || std::abs(v - 0.008) < 1e-9) << v;
    seen.insert(std::round(v * 1e6));
    EXPECT_EQ(out, p.explore(space, donor, key));  // the same key, the same answer
  }
  EXPECT_EQ(seen.size(), 2u);
  c.resample_probability = 1;
  PopulationSchedule always(c);
  int moved = 0;
  for (std::int64_t key = 0; key < 20; ++key)
    moved += *as_double(always.explore(space, donor, key).at("lr")) != 0.01;
  EXPECT_EQ(moved, 20);
}

}  // namespace
}  // namespace hpo::search
