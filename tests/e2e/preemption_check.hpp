// The preemption scenario, shared by the one-host and the test-hosts end-to-end
// tests: a torch trial starts on the only worker (`spot`, started with a
// notice file or URL); after three epochs `give_notice` gives the notice; the worker
// must stop it with a checkpoint, release it (no failure counted) and exit 0;
// the worker `start_steady` then starts must resume it from the checkpoint;
// and it must end with exactly the metrics of the same trial run again without
// interruption. Returns the seconds from the notice to the resumed attempt's
// first report (a figure, never asserted on).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/cluster.hpp"
#include "tests/support/tabular.hpp"

namespace hpo::e2e {

inline double check_preempted_trial_resumes(hpo::testing::Cluster& c,
                                            const std::function<void()>& give_notice,
                                            hpo::testing::Process& spot,
                                            const std::function<void()>& start_steady) {
  using Json = nlohmann::json;
  using namespace std::chrono_literals;
  using hpo::testing::wait_for;
  const std::string train = c.home() + "/preempt-train.csv";
  hpo::testing::write_tabular_csv(train, 3000, 3);
  Json spec = {
      {"name", "preempted"},
      {"objective", {{"metric", "val_accuracy"}, {"mode", "max"}}},
      {"parameters", {{"lr", {{"type", "categorical"}, {"values", {0.01}}}}}},
      {"search", {{"algorithm", "grid"}, {"max_trials", 1}}},
      {"trial",
       {{"kind", "torch"},
        {"task", "classification"},
        {"model", {{"type", "mlp"}, {"hidden", 32}, {"depth", 1}, {"dropout", 0.1}}},
        {"data",
         {{"format", "csv"}, {"train", train}, {"target", "y"}, {"validation_fraction", 0.2}}},
        {"optimizer", {{"type", "adam"}, {"lr", "{lr}"}}},
        {"batch_size", 32},
        // Long enough that the notice always lands mid-training: on a fast
        // core 40 epochs ended within a second, before the notice took effect.
        {"epochs", 400},
        {"timeout_s", 300},
        {"max_attempts", 2}}}};
  auto submit = [&](const std::string& name) {
    spec["name"] = name;
    return c.submit(spec);
  };

  const std::string id = submit("preempted");
  const std::string trial = id + "-0";
  Json detail;
  auto reports_past = [&](std::size_t n) {
    return wait_for(
        [&] {
          detail = c.get("/api/trials/" + trial);
          return detail.is_object() && detail["reports"].size() > n;
        },
        120s);
  };
  EXPECT_TRUE(reports_past(2)) << c.logs();
  const auto noticed = std::chrono::steady_clock::now();
  give_notice();
  EXPECT_EQ(spot.wait(60s), 0) << c.logs();
  detail = c.get("/api/trials/" + trial);
  EXPECT_EQ(detail["state"], "queued") << detail.dump(2);
  EXPECT_EQ(detail["attempts"].size(), 1u) << detail.dump(2);
  EXPECT_EQ(detail["attempts"][0]["outcome"], "released") << detail.dump(2);
  const std::size_t before = detail["reports"].size();

  start_steady();
  EXPECT_TRUE(reports_past(before)) << c.logs();
  const double resume_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - noticed).count();
  Json sweep = c.wait_finished(id, 240s);
  EXPECT_EQ(sweep.value("state", ""), "finished") << sweep.dump(2) << c.logs();
  detail = c.get("/api/trials/" + trial);
  EXPECT_EQ(detail["state"], "completed") << detail.dump(2);
  EXPECT_EQ(detail["attempt"], 1);
  EXPECT_NE(detail.value("log_tail", "").find("resuming from a checkpoint"), std::string::npos)
      << detail["log_tail"];
  // The resumed attempt's first epoch is past the first attempt's last.
  EXPECT_GT(detail["reports"][before].value("step", 0), 1) << detail.dump(2);

  const std::string again = submit("uninterrupted");
  EXPECT_EQ(c.wait_finished(again, 240s).value("state", ""), "finished") << c.logs();
  Json ref = c.get("/api/trials/" + again + "-0");
  EXPECT_EQ(ref["attempt"], 0);
  for (const char* m : {"val_loss", "val_accuracy", "train_loss"})
    EXPECT_EQ(detail["metrics"].value(m, -1.0), ref["metrics"].value(m, -2.0)) << m;
  return resume_s;
}

}  // namespace hpo::e2e
