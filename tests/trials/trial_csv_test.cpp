// The trials CSV (trials/trial_csv.hpp): what `hpo trials --csv` writes reads
// back as the same trials, and every malformed file is refused with the line,
// the column and what was expected.
#include "trials/trial_csv.hpp"

#include <gtest/gtest.h>

#include "tests/search/space_fixtures.hpp"

namespace hpo::trials {
namespace {

using search::testing::cat_param;
using search::testing::mixed_space;

// mixed_space plus a categorical of mixed types and one of awkward texts.
SweepSpec csv_spec() {
  SweepSpec spec;
  spec.objective.metric = "loss";
  spec.space = mixed_space();
  spec.space.params.push_back(cat_param("width", {std::int64_t{64}, std::int64_t{128}, true}));
  spec.space.params.push_back(
      cat_param("act", {std::string("relu"), std::string("=SUM(A1)"), std::string("a,\"b\"\nc")}));
  return spec;
}

Trial trial(std::int64_t number, TrialState state, search::Params params,
            std::optional<double> loss) {
  Trial t;
  t.id = "sw-" + std::to_string(number);
  t.number = number;
  t.state = state;
  t.params = std::move(params);
  t.value = loss;
  if (loss) t.metrics["loss"] = *loss;
  t.metrics["acc"] = 0.5 + static_cast<double>(number) / 10;
  t.worker = "host-" + std::to_string(number);
  t.started_ms = 1000 + number;
  t.finished_ms = 2000 + number;
  return t;
}

std::vector<Trial> sample_trials() {
  return {
      trial(0, TrialState::kCompleted,
            {{"lr", 0.001},
             {"layers", std::int64_t{2}},
             {"opt", std::string("sgd")},
             {"momentum", 0.9},
             {"width", std::int64_t{128}},
             {"act", std::string("=SUM(A1)")}},
            0.25),
      trial(1, TrialState::kPruned,
            {{"lr", 0.0123456789},
             {"layers", std::int64_t{4}},
             {"opt", std::string("adam")},
             {"width", true},
             {"act", std::string("a,\"b\"\nc")}},
            std::nullopt),
      trial(2, TrialState::kFailed,
            {{"lr", 0.1},
             {"layers", std::int64_t{1}},
             {"opt", std::string("adam")},
             {"width", std::int64_t{64}},
             {"act", std::string("relu")}},
            std::nullopt),
  };
}

// The sample trials as `hpo trials --csv` writes them; trial 2's error has a
// formula start, a comma and quotes.
std::string sample_csv() {
  std::vector<Trial> trials = sample_trials();
  trials[2].error = "-oom, \"out of memory\"";
  std::vector<const Trial*> rows;
  for (const auto& t : trials) rows.push_back(&t);
  return write_trials_csv(rows);
}

// The message of a refused import, or "" when it was accepted.
std::string refusal(const std::string& csv) {
  auto r = read_trials_csv(csv, csv_spec());
  return r ? std::string() : r.error().message;
}

TEST(TrialCsv, WhatIsWrittenReadsBackAsTheSameTrials) {
  const std::string csv = sample_csv();
  // Formula-like texts are guarded so a spreadsheet shows them as text.
  EXPECT_NE(csv.find("'=SUM(A1)"), std::string::npos);
  EXPECT_NE(csv.find("\"'-oom, \"\"out of memory\"\"\""), std::string::npos);
  auto read = read_trials_csv(csv, csv_spec());
  ASSERT_TRUE(read) << read.error().message;
  const std::vector<Trial> want = sample_trials();
  ASSERT_EQ(read->size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    const ImportedTrial& got = (*read)[i];
    EXPECT_EQ(got.state, want[i].state);
    EXPECT_EQ(got.params, want[i].params);  // types too: 128 an int, true a bool
    EXPECT_EQ(got.value, want[i].value);
    EXPECT_EQ(got.metrics.at("acc"), want[i].metrics.at("acc"));
    EXPECT_EQ(got.worker, want[i].worker);
    EXPECT_EQ(got.started_ms, want[i].started_ms);
    EXPECT_EQ(got.finished_ms, want[i].finished_ms);
  }
  EXPECT_EQ((*read)[2].error, "-oom, \"out of memory\"");
  // An inactive parameter (momentum under adam) stays absent.
  EXPECT_FALSE((*read)[1].params.count("momentum"));
}

TEST(TrialCsv, ReadsCrlfABomBlankLinesAndTheValueColumnAsTheObjective) {
  const std::string csv =
      "\xEF\xBB\xBFstate,value,param:lr,param:layers,param:opt,param:momentum,param:width,"
      "param:act\r\n"
      "\r\n"
      "completed,0.5,0.01,3,adam,,64,relu\r\n"
      "completed,0.75,0.02,3.0,sgd,0.5,true,relu\r\n";
  auto read = read_trials_csv(csv, csv_spec());
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].value, 0.5);
  EXPECT_EQ((*read)[0].metrics.at("loss"), 0.5);  // the objective is kept as its metric too
  EXPECT_EQ(std::get<std::int64_t>((*read)[1].params.at("layers")), 3);  // 3.0 fits an int
  EXPECT_EQ(std::get<bool>((*read)[1].params.at("width")), true);
}

TEST(TrialCsv, TheObjectiveMetricWinsOverTheValueColumn) {
  auto read = read_trials_csv(
      "state,value,metric:loss,param:lr,param:layers,param:opt,param:width,param:act\n"
      "completed,9,0.125,0.01,1,adam,64,relu\n",
      csv_spec());
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ((*read)[0].value, 0.125);
}

TEST(TrialCsv, EachMalformedFileIsRefusedWithItsLineColumnAndWhatWasExpected) {
  const std::string head = "state,value,param:lr,param:layers,param:opt,param:width,param:act\n";
  struct Case {
    std::string csv;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases{
      {"", {"empty", "expected a header"}},
      {"state,colour\ncompleted,red\n", {"line 1, column 2", "unknown column \"colour\""}},
      {"state,state\n", {"line 1, column 2", "appears twice"}},
      {"state,param:depth\n",
       {"line 1, column 2", "no parameter \"depth\"", "lr, layers, opt, momentum, width, act"}},
      {"value,param:lr\n0.1,0.01\n", {"line 1", "no \"state\" column"}},
      {head + "completed,0.5,0.01,1,adam,64\n", {"line 2", "6 cells, expected 7"}},
      {head + "running,0.5,0.01,1,adam,64,relu\n",
       {"line 2, column 1 (state)", "\"running\"", "ended trial's state"}},
      {head + "completed,abc,0.01,1,adam,64,relu\n",
       {"line 2, column 2 (value)", "\"abc\"", "a finite number"}},
      {head + "completed,0.5,0.5,1,adam,64,relu\n",
       {"line 2, column 3 (param:lr)", "above the maximum", "a float in [0.0001, 0.1] (log)"}},
      {head + "completed,0.5,0.01,2.5,adam,64,relu\n",
       {"line 2, column 4 (param:layers)", "not an integer", "an integer in [1, 4]"}},
      {head + "completed,0.5,0.01,1,rmsprop,64,relu\n",
       {"line 2, column 5 (param:opt)", "\"rmsprop\" is not among the choices",
        "one of sgd, adam"}},
      {head + "completed,0.5,0.01,1,adam,,relu\n",
       {"line 2, column 6 (param:width)", "\"width\" is active but has no value"}},
      {head + "completed,0.5,0.01,1,sgd,64,relu\n",
       {"line 2 (no column param:momentum)", "\"momentum\" is active"}},
      {head + "completed,,0.01,1,adam,64,relu\n",
       {"line 2", "completed trial without the objective \"loss\"", "metric:loss or value"}},
      {head + "completed,0.5,0.01,1,adam,64,\"relu\n", {"line 2", "never closed"}},
      {head + "completed,0.5,0.01,1,adam,64,\"relu\"x\n",
       {"line 2, column 7", "text after a closing quote"}},
      {head + "failed,,0.01,1,adam,64,relu\ncompleted,0.5,0.01,1,adam,64,relu\n"
              "completed,0.5,0.01,9,adam,64,relu\n",
       {"line 4, column 4 (param:layers)"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.csv);
    const std::string message = refusal(c.csv);
    ASSERT_FALSE(message.empty());
    EXPECT_EQ(message.rfind("csv: ", 0), 0u) << message;
    for (const auto& part : c.says) EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(TrialCsv, AnImportHasAtMostTheLimitOfTrials) {
  std::string csv = "state,value,param:lr,param:layers,param:opt,param:width,param:act\n";
  const std::string row = "failed,,0.01,1,adam,64,relu\n";
  csv.reserve(csv.size() + row.size() * (kMaxImportedTrials + 1));
  for (std::size_t i = 0; i < kMaxImportedTrials; ++i) csv += row;
  auto read = read_trials_csv(csv, csv_spec());
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->size(), kMaxImportedTrials);
  csv += row;
  EXPECT_NE(refusal(csv).find("more than 100000 trials"), std::string::npos) << refusal(csv);
}

}  // namespace
}  // namespace hpo::trials
