#include "web/json_codec.hpp"

#include <gtest/gtest.h>

namespace hpo::web {
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

TEST(JsonCodec, SweepDocumentHasTheContractFields) {
  Json j = to_json(sample_sweep());
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

}  // namespace
}  // namespace hpo::web
