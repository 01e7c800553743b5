#include "trials/record_json.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace hpo::trials::record {
namespace {

trials::Sweep sample_sweep() {
  trials::Sweep s;
  s.id = "sw1";
  s.name = "<img src=x onerror=alert(1)>";
  s.state = trials::SweepState::kFinished;
  s.spec_json =
      R"({"name":"n","objective":{"metric":"loss","mode":"min"},"search":{"max_trials":30}})";
  s.maximize = false;
  s.created_ms = 1000;
  s.finished_ms = 2000;
  s.next_number = 30;
  s.stage = trials::SweepStage::kDone;
  s.counts = {1, 2, 3, 4, 5, 6};
  s.member_counts.completed = 7;
  s.best = trials::BestTrial{"sw1-3", 3, {{"lr", 0.01}, {"layers", std::int64_t{3}}}, 0.25};
  return s;
}

// The objective metric and the budget come from the sweep's parsed spec.
SweepSpec sample_spec() {
  SweepSpec spec;
  spec.objective.metric = "loss";
  spec.search.max_trials = 30;
  return spec;
}

TEST(JsonCodec, SweepDocumentHasTheContractFields) {
  const SweepSpec spec = sample_spec();
  Json j = to_json(sample_sweep(), &spec);
  EXPECT_EQ(j["id"], "sw1");
  EXPECT_EQ(j["state"], "finished");
  EXPECT_EQ(j["objective"]["metric"], "loss");
  EXPECT_EQ(j["objective"]["mode"], "min");
  EXPECT_EQ(j["counts"]["pruned"], 5);
  EXPECT_EQ(j["best"]["trial_id"], "sw1-3");
  EXPECT_EQ(j["best"]["params"]["layers"], 3);
  EXPECT_EQ(j["max_trials"], 30);
  EXPECT_EQ(j["spec"]["search"]["max_trials"], 30);
}

TEST(JsonCodec, SweepRoundTrips) {
  auto s = sample_sweep();
  trials::Sweep back;
  ASSERT_TRUE(from_json(to_json(s), back).ok());
  EXPECT_EQ(back.id, s.id);
  EXPECT_EQ(back.name, s.name);
  EXPECT_EQ(back.state, s.state);
  EXPECT_EQ(back.stage, s.stage);
  EXPECT_EQ(back.counts.cancelled, 6);
  EXPECT_EQ(back.member_counts.completed, 7);
  ASSERT_TRUE(back.best.has_value());
  EXPECT_EQ(back.best->value, 0.25);
  EXPECT_EQ(std::get<std::int64_t>(back.best->params.at("layers")), 3);
  EXPECT_EQ(std::get<double>(back.best->params.at("lr")), 0.01);
  EXPECT_EQ(to_json(back), to_json(s));
}

TEST(JsonCodec, TrialRoundTripsWithNullValue) {
  trials::Trial t;
  t.id = "sw1-0";
  t.sweep_id = "sw1";
  t.number = 0;
  t.params = {{"opt", std::string("adam")}, {"bn", true}};
  t.state = trials::TrialState::kRunning;
  t.attempt = 2;
  t.worker = "w1";
  t.metrics = {{"loss", 0.5}};
  t.control = trials::Control::kPrune;
  Json j = to_json(t);
  EXPECT_TRUE(j["value"].is_null());
  trials::Trial back;
  ASSERT_TRUE(from_json(j, back).ok());
  EXPECT_FALSE(back.value.has_value());
  EXPECT_EQ(back.state, trials::TrialState::kRunning);
  EXPECT_EQ(back.control, trials::Control::kPrune);
  EXPECT_EQ(std::get<std::string>(back.params.at("opt")), "adam");
  EXPECT_EQ(std::get<bool>(back.params.at("bn")), true);
  EXPECT_EQ(to_json(back), j);
  t.value = 1.5;
  ASSERT_TRUE(from_json(to_json(t), back).ok());
  EXPECT_EQ(back.value, 1.5);
}

TEST(JsonCodec, WorkerAndCountsRoundTrip) {
  trials::WorkerInfo w;
  w.name = "gpu-host-1";
  w.host = "h";
  w.slots = 4;
  w.busy_slots = 2;
  w.trials = {"a-1", "a-2"};
  w.gpus = {{0, "H200", 141000, 1000, 55}};
  w.last_heartbeat_ms = 77;
  trials::WorkerInfo back;
  ASSERT_TRUE(from_json(to_json(w), back).ok());
  EXPECT_EQ(to_json(back), to_json(w));
  trials::Counts c{1, 2, 3, 4, 5, 6}, cb;
  ASSERT_TRUE(from_json(to_json(c), cb).ok());
  EXPECT_EQ(cb.finished(), c.finished());
}

TEST(JsonCodec, DecodeErrorsNameTheField) {
  trials::Trial t;
  auto s = from_json(Json{{"id", "x"}, {"number", "zero"}}, t);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.error().fields.at(0).path, "trial.number");
  trials::Sweep sw;
  EXPECT_FALSE(from_json(Json::array(), sw).ok());
}

TEST(JsonCodec, ListDocuments) {
  Json doc = {{"trials", Json::array({to_json(trials::Trial{})})}, {"total", 1}};
  std::vector<trials::Trial> out;
  ASSERT_TRUE(from_json_list(doc, "trials", out).ok());
  EXPECT_EQ(out.size(), 1u);
  EXPECT_FALSE(from_json_list(Json::object(), "trials", out).ok());
}

// One rule for numbers: not finite is written null, null reads back as NaN
// (or as no value where the field is optional), wherever the record sits.
TEST(JsonCodec, NonFiniteNumbersAreNullAndNullReadsBackAsNaN) {
  Metrics m{{"loss", std::nan("")}, {"acc", 0.5}, {"inf", HUGE_VAL}};
  Json j = to_json(m);
  EXPECT_TRUE(j["loss"].is_null());
  EXPECT_TRUE(j["inf"].is_null());
  EXPECT_EQ(dump(j), R"({"acc":0.5,"inf":null,"loss":null})");
  Metrics back;
  ASSERT_TRUE(from_json(j, back).ok());
  EXPECT_TRUE(std::isnan(back.at("loss")));
  EXPECT_EQ(back.at("acc"), 0.5);

  search::Params p{{"lr", std::nan("")}, {"n", std::int64_t{3}}};
  search::Params pb;
  ASSERT_TRUE(from_json(to_json(p), pb).ok());
  EXPECT_TRUE(std::isnan(std::get<double>(pb.at("lr"))));
  EXPECT_EQ(std::get<std::int64_t>(pb.at("n")), 3);
  // The text form (the Redis trial hash, rank jobs, manifests) is the same codec.
  auto text = params_from_json(params_to_json(p));
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(std::isnan(std::get<double>(text->at("lr"))));

  // A best trial whose value is not finite reads back (it used to be refused).
  Sweep s = sample_sweep();
  s.best->value = std::nan("");
  Sweep sb;
  ASSERT_TRUE(from_json(to_json(s), sb).ok());
  ASSERT_TRUE(sb.best.has_value());
  EXPECT_TRUE(std::isnan(sb.best->value));

  Trial t;
  t.value = std::nan("");
  Trial tb;
  ASSERT_TRUE(from_json(to_json(t), tb).ok());
  EXPECT_FALSE(tb.value.has_value());
}

TEST(JsonCodec, IntegersAreNeverWrappedAndIntegralFloatsAreIntegers) {
  // Lua's cjson writes a millisecond time with an exponent.
  AttemptRecord a;
  ASSERT_TRUE(from_json(Json::parse(R"({"attempt":1,"worker":"w","started_ms":1.733068800123e+12,
                                        "ended_ms":0,"outcome":"running","error":""})"),
                        a)
                  .ok());
  EXPECT_EQ(a.started_ms, 1733068800123);
  AttemptRecord bad;
  auto frac = from_json(Json::parse(R"({"attempt":1.5,"worker":"w","outcome":"x"})"), bad);
  ASSERT_FALSE(frac.ok());
  EXPECT_EQ(frac.error().fields.at(0).path, "attempt.attempt");
  search::Params huge;
  EXPECT_FALSE(from_json(Json::parse(R"({"n":18446744073709551615})"), huge).ok());
  StepReport r;
  EXPECT_FALSE(from_json(Json::parse(R"({"step":9223372036854775808,"metrics":{}})"), r).ok());
}

TEST(JsonCodec, EveryStoredRecordRoundTrips) {
  StepReport r{7, {{"loss", 0.25}}, 123};
  StepReport rb;
  ASSERT_TRUE(from_json(to_json(r), rb).ok());
  EXPECT_EQ(to_json(rb), to_json(r));
  AttemptRecord a{2, "w", 10, 20, "failed", "exit 1"};
  AttemptRecord ab;
  ASSERT_TRUE(from_json(to_json(a), ab).ok());
  EXPECT_EQ(to_json(ab), to_json(a));
  Trial t;
  t.id = "s-1";
  t.released = 2;
  t.sweep_id = "s";
  t.plan.lineage = search::Lineage{8, 0, 1, 3, 0, true, "steps"};
  Trial tb;
  ASSERT_TRUE(from_json(to_json(t), tb).ok());
  EXPECT_EQ(tb.released, 2);
  EXPECT_EQ(tb.plan, t.plan);
  EXPECT_EQ(to_json(t)["extra"]["resume_from"], "s-0");
  EXPECT_EQ(to_json(tb), to_json(t));
  Sweep s = sample_sweep();
  s.unschedulable = "needs 8 slots";
  Sweep sb;
  ASSERT_TRUE(from_json(to_json(s), sb).ok());
  EXPECT_EQ(sb.unschedulable, "needs 8 slots");
  Event e{"1-0", "trial.finished", "s", "s-1", R"({"value":1.5})"};
  Event eb;
  ASSERT_TRUE(from_json(to_json(e), eb).ok());
  EXPECT_EQ(to_json(eb), to_json(e));
}

TEST(JsonCodec, TheSweepDocumentCarriesTheSpecsObjectiveAndBudget) {
  const SweepSpec spec = sample_spec();
  SweepDocument d;
  ASSERT_TRUE(from_json(to_json(sample_sweep(), &spec), d).ok());
  EXPECT_EQ(d.metric, "loss");
  EXPECT_EQ(d.max_trials, 30);
  EXPECT_EQ(d.sweep.id, "sw1");
  // Without the parsed spec the text is not read leniently: nothing is guessed.
  SweepDocument bare;
  ASSERT_TRUE(from_json(to_json(sample_sweep()), bare).ok());
  EXPECT_EQ(bare.metric, "");
  EXPECT_EQ(bare.max_trials, 0);
}

}  // namespace
}  // namespace hpo::trials::record
