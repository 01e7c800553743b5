// CommandExecutor with real tiny programs: scripts written into a temp dir.
// /bin/sh appears here only as the program under test, never as the executor's
// way of running a command.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include "core/child_process.hpp"
#include "ensemble/bagging.hpp"
#include "ensemble/bagging_json.hpp"
#include "ensemble/prediction_file.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/workers/agent/test_util.hpp"
#include "trials/trial_plan.hpp"
#include "workers/checkpoint_dir.hpp"
#include "workers/command_executor.hpp"
#include "workers/control_dir.hpp"

namespace hpo::workers {
namespace {

using hpo::testing::process_gone;
using hpo::testing::wait_for;
using testing::read_file;
using testing::RecordingReporter;
using testing::TempDir;

trials::SweepSpec command_spec(std::vector<std::string> argv, std::string metric = "loss") {
  trials::SweepSpec spec;
  spec.objective.metric = std::move(metric);
  spec.trial.kind = trials::TrialKind::kCommand;
  spec.trial.command.argv = std::move(argv);
  return spec;
}

TrialTask make_task(const trials::SweepSpec& spec, search::Params params = {}) {
  TrialTask task;
  task.spec = &spec;
  task.trial.id = "sw1-7";
  task.trial.sweep_id = "sw1";
  task.trial.number = 7;
  task.trial.attempt = 2;
  task.trial.params = std::move(params);
  return task;
}

CommandOptions fast_options(double grace_s = 5.0) {
  CommandOptions o;
  o.kill_grace_s = grace_s;
  o.base_env = {"PATH=/usr/bin:/bin", "KEEP=1"};
  o.poll_ms = 10;
  return o;
}

bool no_children_left() {
  return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD;
}

TEST(MetricLine, ParsesIntermediateFinalAndIgnoresOtherLines) {
  EXPECT_FALSE(parse_metric_line("epoch 3 done").has_value());
  EXPECT_FALSE(parse_metric_line("hpo-metrics {\"a\": 1}").has_value());
  auto m =
      parse_metric_line(R"(hpo-metric {"step": 3, "loss": 0.41, "accuracy": 0.87, "tag": "x"})");
  ASSERT_TRUE(m && *m);
  EXPECT_EQ((*m)->step, 3);
  EXPECT_FALSE((*m)->final);
  EXPECT_EQ((*m)->metrics, (trials::Metrics{{"loss", 0.41}, {"accuracy", 0.87}}));
  auto f = parse_metric_line(R"(hpo-metric {"final": true, "accuracy": 0.88})");
  ASSERT_TRUE(f && *f);
  EXPECT_TRUE((*f)->final);
  EXPECT_FALSE((*f)->step.has_value());
  auto bad = parse_metric_line("hpo-metric {not json");
  ASSERT_TRUE(bad.has_value());
  EXPECT_FALSE(bad->ok());
  auto bad_step = parse_metric_line(R"(hpo-metric {"step": 1.5, "loss": 1})");
  ASSERT_TRUE(bad_step.has_value());
  EXPECT_FALSE(bad_step->ok());
  auto huge_step = parse_metric_line(R"(hpo-metric {"step": 1e300, "loss": 1})");
  ASSERT_TRUE(huge_step.has_value());
  EXPECT_FALSE(huge_step->ok());
  // Bounded names and counts.
  auto long_name = parse_metric_line("hpo-metric {\"" + std::string(129, 'a') + "\": 1}");
  ASSERT_TRUE(long_name.has_value());
  ASSERT_FALSE(long_name->ok());
  EXPECT_NE(long_name->error().message.find("128"), std::string::npos);
  EXPECT_TRUE(parse_metric_line("hpo-metric {\"" + std::string(128, 'a') + "\": 1}")->ok());
  std::string many = "hpo-metric {";
  for (int i = 0; i < 257; ++i) many += (i ? ",\"m" : "\"m") + std::to_string(i) + "\": 1";
  auto too_many = parse_metric_line(many + "}");
  ASSERT_TRUE(too_many.has_value());
  EXPECT_FALSE(too_many->ok());
}

TEST(CommandExecutor, IntermediateReportsAndFinalValue) {
  TempDir dir;
  auto script = dir.script("train.sh", R"(
echo "starting"
echo 'hpo-metric {"step": 1, "loss": 0.5}'
echo 'hpo-metric {"step": 2, "loss": 0.3, "acc": 0.8}'
echo "to stderr" >&2
echo 'hpo-metric {"final": true, "loss": 0.25, "acc": 0.9}'
)");
  auto spec = command_spec({script});
  RecordingReporter rep;
  auto r = CommandExecutor(fast_options()).run(make_task(spec), rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  ASSERT_TRUE(r.value.has_value());
  EXPECT_DOUBLE_EQ(*r.value, 0.25);
  EXPECT_EQ(r.metrics, (trials::Metrics{{"loss", 0.25}, {"acc", 0.9}}));
  ASSERT_EQ(rep.reports.size(), 2u);
  EXPECT_EQ(rep.reports[0].first, 1);
  EXPECT_EQ(rep.reports[1].first, 2);
  EXPECT_DOUBLE_EQ(rep.reports[1].second.at("acc"), 0.8);
  EXPECT_NE(std::find(rep.lines.begin(), rep.lines.end(), "starting"), rep.lines.end());
  EXPECT_NE(std::find(rep.lines.begin(), rep.lines.end(), "to stderr"), rep.lines.end());
  EXPECT_TRUE(no_children_left());
}

TEST(CommandExecutor, WithoutFinalLineTheLastReportedValueIsTheResult) {
  TempDir dir;
  auto script = dir.script("train.sh", R"(
echo 'hpo-metric {"step": 1, "loss": 0.5}'
echo 'hpo-metric {"step": 2, "loss": 0.375}'
echo 'hpo-metric {"step": 3, "acc": 0.9}'
)");
  auto spec = command_spec({script});
  RecordingReporter rep;
  auto r = CommandExecutor(fast_options()).run(make_task(spec), rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  ASSERT_TRUE(r.value.has_value());
  EXPECT_DOUBLE_EQ(*r.value, 0.375);
}

TEST(CommandExecutor, NoValueForTheObjectiveFailsWithTheReason) {
  TempDir dir;
  auto script = dir.script("train.sh", R"(echo 'hpo-metric {"final": true, "acc": 0.9}')");
  auto spec = command_spec({script}, "loss");
  RecordingReporter rep;
  auto r = CommandExecutor(fast_options()).run(make_task(spec), rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_EQ(r.error, "trial reported no value for metric loss");
  EXPECT_FALSE(r.retryable);
}

TEST(CommandExecutor, PlaceholdersAreRenderedWithoutAnyShell) {
  TempDir dir;
  std::ofstream(dir.file("keep")) << "keep";
  // Writes each argument NUL-terminated, so the test sees argv exactly.
  auto script = dir.script("args.sh", R"(
for a in "$@"; do printf '%s\0' "$a"; done > "$OUT_FILE"
echo 'hpo-metric {"final": true, "loss": 1}'
)");
  std::string evil = "$(touch " + dir.file("pwned") + "); rm -rf " + dir.file("keep") + " `id` *";
  auto spec = command_spec({script, "--name={name}", "{name}", "--lr", "{lr}", "{{literal}}"});
  spec.trial.command.env = {{"OUT_FILE", dir.file("argv")}};
  RecordingReporter rep;
  auto r =
      CommandExecutor(fast_options()).run(make_task(spec, {{"name", evil}, {"lr", 0.001}}), rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  std::string expected =
      "--name=" + evil + '\0' + evil + '\0' + "--lr" + '\0' + "0.001" + '\0' + "{literal}" + '\0';
  EXPECT_EQ(read_file(dir.file("argv")), expected);
  EXPECT_FALSE(std::filesystem::exists(dir.file("pwned")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("keep")));
}

TEST(CommandExecutor, ParamsAndTrialIdentityArriveInTheEnvironment) {
  TempDir dir;
  auto script = dir.script("env.sh", R"(
printf '%s' "$HPO_PARAMS" > "$D/params"
printf '%s|%s|%s|%s|%s|%s' "$HPO_TRIAL_ID" "$HPO_SWEEP_ID" "$HPO_ATTEMPT" "${CUDA_VISIBLE_DEVICES-unset}" "$KEEP" "$EXTRA" > "$D/ids"
echo 'hpo-metric {"final": true, "loss": 2}'
)");
  auto spec = command_spec({script});
  spec.trial.command.env = {{"D", dir.path()}, {"EXTRA", "x y"}};
  search::Params params{{"lr", 0.01}, {"layers", std::int64_t{3}}, {"opt", std::string("adam")}};
  RecordingReporter rep;
  auto r = CommandExecutor(fast_options()).run(make_task(spec, params), rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_EQ(read_file(dir.file("params")), trials::params_to_json(params));
  // No slot GPUs: CUDA_VISIBLE_DEVICES is set, and empty (no GPU visible).
  EXPECT_EQ(read_file(dir.file("ids")), "sw1-7|sw1|2||1|x y");
}

// HPO_SEED: the same for every attempt of a trial, another for another trial
// or search.seed, within what numpy and torch take; and Python runs unbuffered
// unless the spec says otherwise.
TEST(CommandExecutor, TheTrialsSeedAndUnbufferedPythonArriveInTheEnvironment) {
  auto value = [](const TrialTask& task) {
    std::map<std::string, std::string> out;
    for (const auto& kv : CommandExecutor(fast_options()).child_env(task)) {
      const auto eq = kv.find('=');
      out[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return out;
  };
  auto spec = command_spec({"true"});
  const auto task = make_task(spec);
  const auto env = value(task);
  EXPECT_EQ(env.at("PYTHONUNBUFFERED"), "1");
  const std::string seed = env.at("HPO_SEED");
  ASSERT_FALSE(seed.empty());
  EXPECT_LT(std::stoull(seed), 1ULL << 31);
  auto retry = task;
  retry.trial.attempt += 1;
  EXPECT_EQ(value(retry).at("HPO_SEED"), seed);
  auto next = task;
  next.trial.number += 1;
  EXPECT_NE(value(next).at("HPO_SEED"), seed);
  auto reseeded = spec;
  reseeded.search.sampler.seed = 99;
  EXPECT_NE(value(make_task(reseeded)).at("HPO_SEED"), seed);
  spec.trial.command.env = {{"PYTHONUNBUFFERED", ""}};
  EXPECT_EQ(value(make_task(spec)).at("PYTHONUNBUFFERED"), "");
}

TEST(CommandExecutor, SlotGpusMapThroughTheWorkersOwnVisibleDevices) {
  EXPECT_EQ(child_visible_devices({}, ""), "");
  EXPECT_EQ(child_visible_devices({0, 1}, ""), "0,1");
  EXPECT_EQ(child_visible_devices({1}, "4,5"), "5");
  EXPECT_EQ(child_visible_devices({0}, "GPU-abc,GPU-def"), "GPU-abc");
  auto spec = command_spec({"true"});
  auto opts = fast_options();
  opts.base_env.push_back("CUDA_VISIBLE_DEVICES=6,7");
  opts.base_env.push_back("HPO_TRIAL_ID=stale");
  auto task = make_task(spec);
  task.gpus = {1};
  auto env = CommandExecutor(opts).child_env(task);
  EXPECT_NE(std::find(env.begin(), env.end(), "CUDA_VISIBLE_DEVICES=7"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "HPO_TRIAL_ID=sw1-7"), env.end());
  EXPECT_EQ(std::find(env.begin(), env.end(), "HPO_TRIAL_ID=stale"), env.end());
}

TEST(CommandExecutor, NonZeroExitFailsWithTheStderrTailAndIsRetryable) {
  TempDir dir;
  // ~6 KB of stderr: only the tail (the last ~2 KB) is kept.
  auto script = dir.script("fail.sh", R"(
i=0
while [ $i -lt 300 ]; do echo "noise line number $i" >&2; i=$((i+1)); done
echo "CUDA out of memory" >&2
exit 3
)");
  auto spec = command_spec({script});
  RecordingReporter rep;
  auto r = CommandExecutor(fast_options()).run(make_task(spec), rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_TRUE(r.retryable);
  EXPECT_EQ(r.error.rfind("exited with status 3: ", 0), 0u) << r.error;
  EXPECT_NE(r.error.find("CUDA out of memory"), std::string::npos);
  EXPECT_EQ(r.error.find("noise line number 0\n"), std::string::npos);
  EXPECT_LE(r.error.size(), 2100u);
}

TEST(CommandExecutor, MissingProgramFailsWithoutRetry) {
  auto spec = command_spec({"hpo-no-such-program-xyz", "{a}"});
  RecordingReporter rep;
  auto r = CommandExecutor(fast_options()).run(make_task(spec, {{"a", std::int64_t{1}}}), rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_FALSE(r.retryable);
  EXPECT_NE(r.error.find("not found in PATH"), std::string::npos) << r.error;
}

TEST(CommandExecutor, TimeoutKillsAProgramThatIgnoresSigtermWithinTheGrace) {
  TempDir dir;
  // Ignores SIGTERM (and so does its `sleep`, which inherits the ignored
  // disposition): only the SIGKILL after the grace period ends it.
  auto script = dir.script("stubborn.sh", R"(
trap '' TERM
echo 'hpo-metric {"step": 1, "loss": 9}'
while :; do sleep 1; done
)");
  auto spec = command_spec({script});
  spec.trial.timeout_s = 0.3;
  RecordingReporter rep;
  auto start = std::chrono::steady_clock::now();
  auto r = CommandExecutor(fast_options(/*grace_s=*/0.3)).run(make_task(spec), rep);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_EQ(r.error, "timed out after 0.3 s");
  EXPECT_FALSE(r.retryable);
  // Causal, not a speed: the grace had to pass (SIGTERM did nothing) before SIGKILL.
  EXPECT_GE(elapsed, std::chrono::milliseconds(550));
  EXPECT_TRUE(no_children_left());
}

TEST(CommandExecutor, CancelKillsTheWholeProcessGroup) {
  TempDir dir;
  // The trial starts a child of its own; the cancel must reach it too.
  auto script = dir.script("parent.sh", R"(
sleep 1000 &
echo $! > "$D/grandchild.tmp" && mv "$D/grandchild.tmp" "$D/grandchild"
echo 'hpo-metric {"step": 1, "loss": 4}'
wait
)");
  auto spec = command_spec({script});
  spec.trial.command.env = {{"D", dir.path()}};
  RecordingReporter rep;
  trials::TrialResult r;
  std::thread runner([&] { r = CommandExecutor(fast_options()).run(make_task(spec), rep); });
  ASSERT_TRUE(wait_for([&] {
    return std::filesystem::exists(dir.file("grandchild")) && !rep.reports_copy().empty();
  }));
  pid_t grandchild = std::stoi(read_file(dir.file("grandchild")));
  ASSERT_FALSE(process_gone(grandchild));
  rep.stop = StopReason::kCancelled;
  runner.join();
  EXPECT_EQ(r.outcome, trials::TrialState::kCancelled);
  ASSERT_TRUE(r.value.has_value());  // the last reported value travels with it
  EXPECT_DOUBLE_EQ(*r.value, 4);
  EXPECT_TRUE(wait_for([&] { return process_gone(grandchild); }));
  EXPECT_TRUE(no_children_left());
}

TEST(CommandExecutor, PruneEndsTheTrialAsPruned) {
  TempDir dir;
  auto script = dir.script("long.sh", R"(
echo 'hpo-metric {"step": 1, "loss": 4}'
exec sleep 1000
)");
  auto spec = command_spec({script});
  RecordingReporter rep;
  trials::TrialResult r;
  std::thread runner([&] { r = CommandExecutor(fast_options()).run(make_task(spec), rep); });
  ASSERT_TRUE(wait_for([&] { return !rep.reports_copy().empty(); }));
  rep.stop = StopReason::kPruned;
  runner.join();
  EXPECT_EQ(r.outcome, trials::TrialState::kPruned);
  EXPECT_TRUE(no_children_left());
}

// Runs `script` in an attempt directory of `dir` until its first report,
// then stops it for `stop`; the result (the reporter keeps its lines).
trials::TrialResult stop_after_first_report(const TempDir& dir, const std::string& script,
                                            StopReason stop, RecordingReporter& rep,
                                            std::string* work_dir = nullptr) {
  auto spec = command_spec({script});
  trials::TrialResult r;
  auto task = make_task(spec);
  task.work_dir = dir.file("a0");
  std::filesystem::create_directories(task.work_dir);
  if (work_dir) *work_dir = task.work_dir;
  std::thread runner([&] { r = CommandExecutor(fast_options(0.5)).run(task, rep); });
  const bool reported = wait_for([&] { return !rep.reports_copy().empty(); });
  EXPECT_TRUE(reported);
  rep.stop = stop;
  runner.join();
  return r;
}

bool said(const RecordingReporter& rep, const std::string& line) {
  return std::find(rep.lines.begin(), rep.lines.end(), line) != rep.lines.end();
}

// The worker writes why it stops the program into HPO_CONTROL_DIR before the
// signal: SIGTERM for a prune even from a program that checkpoints on a stop.
TEST(CommandExecutor, TheStopsReasonIsWrittenBeforeTheSignal) {
  TempDir dir;
  auto script = dir.script("reason.sh", R"sh(
trap 'echo "stopped for $(cat "$HPO_CONTROL_DIR/stop_reason")"; exit 0' TERM
trap 'echo "USR1 is not for a prune"; exit 0' USR1
echo hpo-checkpoint-on-stop
echo 'hpo-metric {"step": 1, "loss": 4}'
while :; do sleep 0.05; done
)sh");
  RecordingReporter rep;
  std::string work_dir;
  auto r = stop_after_first_report(dir, script, StopReason::kPruned, rep, &work_dir);
  EXPECT_TRUE(rep.declared.load());
  EXPECT_EQ(r.outcome, trials::TrialState::kPruned);
  EXPECT_TRUE(said(rep, "stopped for prune")) << ::testing::PrintToString(rep.lines);
  struct stat st {};
  ASSERT_EQ(::stat(control_dir(work_dir).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
}

// A program that says it checkpoints on a stop, reports once and waits; on
// SIGUSR1 it says the reason it reads, saves, prints hpo-checkpoint, waits
// for the receipt in the control folder, says it and exits.
std::string saving_program(const TempDir& dir, const std::string& name) {
  return dir.script(name, R"sh(
save() {
  echo "asked for $(cat "$HPO_CONTROL_DIR/stop_reason")"
  echo 3 > "$HPO_CHECKPOINT_DIR/step"
  echo hpo-checkpoint
  n=0
  until grep -q '^1 stored' "$HPO_CONTROL_DIR/checkpoint" 2>/dev/null; do
    n=$((n + 1)); [ "$n" -gt 2000 ] && exit 3; sleep 0.01
  done
  echo "receipt: $(cat "$HPO_CONTROL_DIR/checkpoint")"
  exit 0
}
trap save USR1
echo hpo-checkpoint-on-stop
echo 'hpo-metric {"step": 2, "loss": 4}'
while :; do sleep 0.05; done
)sh");
}

// A drain of a program that said `hpo-checkpoint-on-stop`: SIGUSR1 and the
// reason "drain"; it saves, prints `hpo-checkpoint`, sees the receipt in the
// control folder and exits; the attempt is stopped (retryable) with its checkpoint stored.
TEST(CommandExecutor, ADrainAsksAProgramThatCheckpointsOnAStopForItsCheckpoint) {
  TempDir dir;
  const std::string script = saving_program(dir, "drain.sh");
  RecordingReporter rep;
  auto r = stop_after_first_report(dir, script, StopReason::kShutdown, rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_TRUE(r.retryable);
  ASSERT_EQ(rep.puts["checkpoint"], 1) << ::testing::PrintToString(rep.lines);
  for (const char* line : {"asked for drain", "receipt: 1 stored"})
    EXPECT_TRUE(said(rep, line)) << line << ": " << ::testing::PrintToString(rep.lines);
}

// A preemption of a program run by a wrapper script (no exec): the wrapper
// dies of SIGUSR1, and the program under it, which holds stdout, still saves
// its checkpoint and has it stored; the reason it reads is "preempt".
TEST(CommandExecutor, APreemptedProgramUnderAWrapperStillSavesItsCheckpoint) {
  TempDir dir;
  const std::string inner = saving_program(dir, "inner.sh");
  const std::string wrapper = dir.script("wrapper.sh", "/bin/sh " + inner + "\necho 'not reached'");
  RecordingReporter rep;
  auto r = stop_after_first_report(dir, wrapper, StopReason::kPreempted, rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_TRUE(r.retryable);
  ASSERT_EQ(rep.puts["checkpoint"], 1) << ::testing::PrintToString(rep.lines);
  EXPECT_TRUE(said(rep, "asked for preempt")) << ::testing::PrintToString(rep.lines);
  EXPECT_TRUE(said(rep, "receipt: 1 stored")) << ::testing::PrintToString(rep.lines);
  EXPECT_FALSE(said(rep, "not reached"));
  EXPECT_TRUE(no_children_left());
}

TEST(CommandExecutor, TheHpoLibraryIsOnPythonPathAfterTheUsersOwnFolders) {
  auto spec = command_spec({"true"});
  auto path = [&](const CommandOptions& o) {
    for (const auto& kv : CommandExecutor(o).child_env(make_task(spec)))
      if (kv.rfind("PYTHONPATH=", 0) == 0) return kv.substr(11);
    return std::string("(none)");
  };
  auto o = fast_options();
  EXPECT_EQ(path(o), "(none)");
  o.python_lib = "/opt/hpo/python";
  EXPECT_EQ(path(o), "/opt/hpo/python");
  spec.trial.command.env = {{"PYTHONPATH", "/mine"}};
  EXPECT_EQ(path(o), "/mine:/opt/hpo/python");
  // The build tree's python/ is found beside the test binaries.
  EXPECT_EQ(find_python_lib(), std::string(HPO_SOURCE_DIR) + "/python");
}

// --- predictions and files from $HPO_OUTPUT_DIR ------------------------------

trials::SweepSpec predicting_spec(const std::string& script) {
  auto spec = command_spec({script});
  trials::CommandData data;
  data.classes = 2;
  data.train_rows = 6;
  data.validation_rows = 3;
  data.test_rows = 2;
  data.features = 4;
  spec.trial.command.data = data;
  return spec;
}

// Runs the task in a fresh attempt directory `name` under `dir`, as the agent does.
trials::TrialResult run_in_work_dir(TrialTask task, const TempDir& dir, const std::string& name,
                                    RecordingReporter& rep) {
  task.work_dir = dir.file(name);
  std::filesystem::create_directories(task.work_dir);
  return CommandExecutor(fast_options()).run(task, rep);
}

// HPO_CHECKPOINT_DIR: what the program keeps there is stored each time it
// prints `hpo-checkpoint`; an attempt that dies, retried, finds the last one
// there and goes on from it.
TEST(CommandCheckpoints, ARetriedAttemptFindsTheLastCheckpointAndGoesOn) {
  TempDir dir;
  auto script = dir.script("count.sh", R"(
n=0
[ -f "$HPO_CHECKPOINT_DIR/state/n" ] && n=$(cat "$HPO_CHECKPOINT_DIR/state/n")
echo "starting at $n"
while [ "$n" -lt 5 ]; do
  n=$((n + 1))
  mkdir -p "$HPO_CHECKPOINT_DIR/state"
  echo "$n" > "$HPO_CHECKPOINT_DIR/state/n"
  echo hpo-checkpoint
  printf 'hpo-metric {"step": %s, "loss": %s}\n' "$n" "$n"
  if [ "$n" -eq 3 ] && [ "$HPO_ATTEMPT" = 0 ]; then echo "dying" >&2; exit 1; fi
done
echo 'hpo-metric {"final": true, "loss": 5}'
)");
  auto spec = command_spec({script});
  RecordingReporter rep;
  auto task = make_task(spec);
  task.trial.attempt = 0;
  auto r = run_in_work_dir(task, dir, "a0", rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_TRUE(r.retryable);
  ASSERT_TRUE(rep.artifacts.count("checkpoint"));
  EXPECT_EQ(rep.puts["checkpoint"], 3);
  rep.reports.clear();
  task.trial.attempt = 1;
  r = run_in_work_dir(task, dir, "a1", rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_EQ(r.value, 5);
  ASSERT_EQ(rep.reports.size(), 2u) << ::testing::PrintToString(rep.lines);  // 1 to 3 not redone
  EXPECT_EQ(rep.reports[0].first, 4);
  bool said = false, started = false;
  for (const auto& l : rep.lines) {
    said = said || l.find("[hpo] resuming: 1 files") != std::string::npos;
    started = started || l == "starting at 3";
  }
  EXPECT_TRUE(said);
  EXPECT_TRUE(started);
}

// A multi-fidelity rung (trials/trial_plan.hpp): the program is told its budget,
// its resource, its rung and the trial it resumes; a trial of no rung gets none.
TEST(CommandExecutor, ARungTrialIsToldItsBudget) {
  TempDir dir;
  auto script = dir.script("budget.sh", R"(
printf '%s|%s|%s|%s' "${HPO_BUDGET-unset}" "${HPO_BUDGET_RESOURCE-unset}" "${HPO_RUNG-unset}" "${HPO_RESUME_FROM-unset}" > "$D/budget"
echo 'hpo-metric {"final": true, "loss": 1}'
)");
  auto spec = command_spec({script});
  spec.trial.command.env = {{"D", dir.path()}};
  RecordingReporter rep;
  auto task = make_task(spec);
  // Resumes trial 4 of sweep "sw1": "sw1-4".
  task.trial.plan.lineage = search::Lineage{9, 0, 2, -1, 4, false, "shards"};
  auto r = CommandExecutor(fast_options()).run(task, rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_EQ(read_file(dir.file("budget")), "9|shards|2|sw1-4");
  task.trial.plan.lineage = search::Lineage{0.25, 0, 0, -1, -1, false, "fraction"};
  r = CommandExecutor(fast_options()).run(task, rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_EQ(read_file(dir.file("budget")), "0.25|fraction|0|unset");
  task.trial.plan = {};
  r = CommandExecutor(fast_options()).run(task, rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_EQ(read_file(dir.file("budget")), "unset|unset|unset|unset");
}

TEST(CommandCheckpoints, PackedFoldersKeepRegularFilesAndRefuseEscapes) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("ck/a/b"));
  std::ofstream(dir.file("ck/a/b/w.bin"), std::ios::binary) << std::string("x\0y\n", 4);
  std::ofstream(dir.file("ck/top.txt")) << "top";
  std::filesystem::create_symlink("/etc/passwd", dir.file("ck/link"));
  StringSink bytes(1 << 20, "pack");
  auto packed = pack_dir(dir.file("ck"), bytes);
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  EXPECT_EQ(packed->files, 2u);
  EXPECT_EQ(packed->bytes, static_cast<std::int64_t>(bytes.bytes().size()));
  ASSERT_EQ(packed->skipped.size(), 1u);
  EXPECT_NE(packed->skipped[0].find("link (a symbolic link)"), std::string::npos);
  std::filesystem::create_directories(dir.file("out"));
  auto n = unpack_dir(bytes.bytes(), dir.file("out"));
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(*n, 2u);
  EXPECT_EQ(read_file(dir.file("out/a/b/w.bin")), std::string("x\0y\n", 4));
  EXPECT_EQ(read_file(dir.file("out/top.txt")), "top");
  for (const std::string bad :
       {"not a pack", "hpo-checkpoint-dir 1\n3 ../evil\nabc", "hpo-checkpoint-dir 1\n3 /etc/x\nabc",
        "hpo-checkpoint-dir 1\n99 short\nabc", "hpo-checkpoint-dir 1\nx y\n"}) {
    auto r = unpack_dir(bad, dir.file("out"));
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/evil"));
}

// Extracts `archive` into `into` with GNU tar (the archive is what users get).
int untar(const std::string& archive, const std::string& into) {
  std::filesystem::create_directories(into);
  hpo::testing::Process tar({"/usr/bin/tar", "-xf", archive, "-C", into}, {}, into + ".log");
  return tar.wait(std::chrono::seconds(60));
}

// A folder as a tar archive: GNU tar extracts the same files (a deep path
// through ustar's prefix field, an empty file, one of a size not a multiple
// of 512); links and names that cannot be kept are left out.
TEST(CommandCheckpoints, AFolderBecomesATarThatTarExtracts) {
  TempDir dir;
  const std::string deep = std::string(60, 'd') + "/" + std::string(70, 'e') + "/events.out";
  std::filesystem::create_directories(
      dir.file("run/" + deep).substr(0, dir.file("run/" + deep).rfind('/')));
  std::string big(2 * kStreamChunk + 513, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 % 253);
  std::ofstream(dir.file("run/" + deep), std::ios::binary) << big;
  std::ofstream(dir.file("run/empty"), std::ios::binary);
  std::ofstream(dir.file("run/scalars.csv")) << "step,loss\n0,1.5\n";
  std::filesystem::create_symlink("/etc/passwd", dir.file("run/link"));
  StringSink tar(std::int64_t{1} << 30, "tar");
  auto stats = tar_dir(dir.file("run"), tar, "HPO_OUTPUT_DIR");
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->files, 3u);
  EXPECT_EQ(tar.bytes().size() % 512, 0u);
  std::ofstream(dir.file("run.tar"), std::ios::binary) << tar.bytes();
  ASSERT_EQ(untar(dir.file("run.tar"), dir.file("x")), 0) << read_file(dir.file("x.log"));
  EXPECT_EQ(read_file(dir.file("x/" + deep)), big);
  EXPECT_EQ(read_file(dir.file("x/scalars.csv")), "step,loss\n0,1.5\n");
  EXPECT_TRUE(std::filesystem::exists(dir.file("x/empty")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("x/link")));
}

// A subfolder of HPO_OUTPUT_DIR (a TensorBoard run) is kept whole as
// output.<name>.tar beside the plain files.
TEST(CommandOutputs, ASubfolderIsKeptAsATarArchive) {
  TempDir dir;
  auto script = dir.script("tb.sh", R"(
mkdir -p "$HPO_OUTPUT_DIR/runs/exp1"
echo events > "$HPO_OUTPUT_DIR/runs/exp1/events.out.tfevents.1"
echo 1 > "$HPO_OUTPUT_DIR/model.txt"
echo 'hpo-metric {"final": true, "loss": 1}'
)");
  auto spec = command_spec({script});
  RecordingReporter rep;
  auto r = run_in_work_dir(make_task(spec), dir, "a0", rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_EQ(rep.artifacts["output.model.txt"], "1\n");
  ASSERT_TRUE(rep.artifacts.count("output.runs.tar")) << ::testing::PrintToString(rep.lines);
  std::ofstream(dir.file("runs.tar"), std::ios::binary) << rep.artifacts["output.runs.tar"];
  ASSERT_EQ(untar(dir.file("runs.tar"), dir.file("x")), 0);
  EXPECT_EQ(read_file(dir.file("x/exp1/events.out.tfevents.1")), "events\n");
}

// A subfolder is kept within bounds: over --max-output-folder-mb, with a path
// too long for tar, or when a kept file has its archive's name, it is left
// out and the log says why (naming the setting only where it helps).
TEST(CommandOutputs, AFolderTooLargeOrShadowedIsLeftOutWithTheReason) {
  TempDir dir;
  auto script = dir.script("big.sh", R"sh(
mkdir -p "$HPO_OUTPUT_DIR/big" "$HPO_OUTPUT_DIR/run" "$HPO_OUTPUT_DIR/small"
head -c 5000 /dev/zero > "$HPO_OUTPUT_DIR/big/blob"
echo file > "$HPO_OUTPUT_DIR/run.tar"
echo x > "$HPO_OUTPUT_DIR/run/x"
echo y > "$HPO_OUTPUT_DIR/small/y"
mkdir -p "$HPO_OUTPUT_DIR/long"
echo z > "$HPO_OUTPUT_DIR/long/$(printf 'n%.0s' $(seq 120))"
echo 'hpo-metric {"final": true, "loss": 1}'
)sh");
  auto spec = command_spec({script});
  auto task = make_task(spec);
  task.work_dir = dir.file("a0");
  std::filesystem::create_directories(task.work_dir);
  auto o = fast_options();
  o.max_output_folder_bytes = 4096;
  RecordingReporter rep;
  auto r = CommandExecutor(o).run(task, rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_TRUE(rep.artifacts.count("output.small.tar"));
  EXPECT_FALSE(rep.artifacts.count("output.big.tar"));
  EXPECT_EQ(rep.artifacts["output.run.tar"], "file\n");  // the file, not the folder
  auto logged = [&](const std::string& part) {
    return std::any_of(rep.lines.begin(), rep.lines.end(),
                       [&](const std::string& l) { return l.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(
      logged("output big not kept: HPO_OUTPUT_DIR/big: holds more than 4096 bytes; at "
             "most 4096 are kept (hpo-worker --max-output-folder-mb)"))
      << ::testing::PrintToString(rep.lines);
  EXPECT_FALSE(rep.artifacts.count("output.long.tar"));
  const auto long_line = std::find_if(rep.lines.begin(), rep.lines.end(), [](const std::string& l) {
    return l.find("output long not kept: ") != std::string::npos;
  });
  ASSERT_NE(long_line, rep.lines.end()) << ::testing::PrintToString(rep.lines);
  EXPECT_NE(long_line->find("a path too long for tar"), std::string::npos) << *long_line;
  EXPECT_EQ(long_line->find("--max-output-folder-mb"), std::string::npos) << *long_line;
  EXPECT_TRUE(logged("output folder run not kept: a file run.tar is"))
      << ::testing::PrintToString(rep.lines);
}

// A pack is streamed: unpacked from pieces of any size (a byte at a time, a
// chunk at a time) it gives the same folder; cut anywhere it is refused.
TEST(CommandCheckpoints, PacksStreamInPiecesOfAnySize) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("ck/sub"));
  std::string big(3 * kStreamChunk + 17, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 % 251);
  std::ofstream(dir.file("ck/sub/weights.bin"), std::ios::binary) << big;
  std::ofstream(dir.file("ck/empty"), std::ios::binary);
  std::ofstream(dir.file("ck/step")) << "42\n";
  StringSink packed(std::int64_t{1} << 30, "pack");
  auto stats = pack_dir(dir.file("ck"), packed);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->files, 3u);
  const std::string& bytes = packed.bytes();
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, kStreamChunk}) {
    const std::string out = dir.file("out" + std::to_string(piece));
    std::filesystem::create_directories(out);
    DirUnpacker unpacker(out);
    // A byte at a time only through the headers and the small files: 3 MiB
    // of single-byte writes would only slow the test.
    for (std::size_t at = 0; at < bytes.size();) {
      const std::size_t n = at < 200 || at > bytes.size() - 200 ? piece : kStreamChunk;
      ASSERT_TRUE(unpacker.write(std::string_view(bytes).substr(at, n)).ok()) << piece;
      at += n;
    }
    auto n = unpacker.finish();
    ASSERT_TRUE(n.ok()) << n.error().message;
    EXPECT_EQ(*n, 3u);
    EXPECT_EQ(read_file(out + "/sub/weights.bin"), big) << piece;
    EXPECT_EQ(read_file(out + "/step"), "42\n");
    EXPECT_TRUE(std::filesystem::exists(out + "/empty"));
  }
  for (std::size_t cut : {std::size_t{5}, std::size_t{30}, bytes.size() / 2, bytes.size() - 1}) {
    std::filesystem::create_directories(dir.file("cut"));
    DirUnpacker unpacker(dir.file("cut"));
    auto st = unpacker.write(std::string_view(bytes).substr(0, cut));
    EXPECT_FALSE(st.ok() && unpacker.finish().ok()) << "cut at " << cut;
  }
}

// A checkpoint the store cannot keep stops the attempt at once, loudly: a
// trial does not train on without the protection it asked for. Too large
// for a store without an artifact folder is not retried (it stays too
// large), and the message says how to get room.
TEST(CommandCheckpoints, ACheckpointThatCannotBeStoredFailsTheAttempt) {
  TempDir dir;
  auto script = dir.script("ck.sh", R"(
echo weights > "$HPO_CHECKPOINT_DIR/w"
echo hpo-checkpoint
i=0
while [ "$i" -lt 600 ]; do
  printf 'hpo-metric {"step": %s, "loss": 1}\n' "$i"
  i=$((i + 1)); sleep 0.1
done
echo 'hpo-metric {"final": true, "loss": 1}'
)");
  auto spec = command_spec({script});
  RecordingReporter rep;
  rep.refuse_puts = Error{ErrorCode::kPayloadTooLarge, "artifact checkpoint is too large", {}};
  auto r = run_in_work_dir(make_task(spec), dir, "big", rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_FALSE(r.retryable);
  EXPECT_NE(r.error.find("the checkpoint could not be stored"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("--artifacts"), std::string::npos) << r.error;
  EXPECT_LT(rep.reports.size(), 600u);  // stopped, not run to the end

  RecordingReporter full;
  full.refuse_puts = Error::internal("cannot write /srv/artifacts/x/.tmp: No space left on device");
  r = run_in_work_dir(make_task(spec), dir, "full", full);
  ASSERT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_TRUE(r.retryable);
  EXPECT_NE(r.error.find("No space left on device"), std::string::npos) << r.error;
}

TEST(CommandOutputs, PredictionsBecomeArtifactsAndOtherFilesAreKept) {
  TempDir dir;
  auto script = dir.script("train.sh", R"(
cd "$HPO_OUTPUT_DIR" || exit 3
printf 'row_id,target,p0,p1\n2,1,0.2,0.8\n0,0,0.9,0.1\n1,1,0.4,0.6\n' > validation.csv
printf 'row_id,target,p0,p1\n0,1,0.3,0.7\n1,0,0.5,0.5\n' > test.csv
echo weights > model.txt
mkdir sub
echo 'hpo-metric {"final": true, "loss": 0.3}'
)");
  auto spec = predicting_spec(script);
  RecordingReporter rep;
  auto r = run_in_work_dir(make_task(spec), dir, "attempt", rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  ASSERT_TRUE(rep.artifacts.count("val_predictions"));
  auto val = ensemble::decode_prediction_file(rep.artifacts["val_predictions"]);
  ASSERT_TRUE(val.ok()) << val.error().message;
  EXPECT_EQ(val->row_ids, (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_FLOAT_EQ(val->values(2, 1), 0.8f);
  ASSERT_TRUE(rep.artifacts.count("test_predictions"));
  EXPECT_EQ(rep.artifacts["output.model.txt"], "weights\n");
  EXPECT_FALSE(rep.artifacts.count("oob_predictions"));
  EXPECT_FALSE(rep.artifacts.count("bagging.json"));  // a search trial has no plan
}

TEST(CommandOutputs, AMalformedFileFailsTheAttemptNamingLineAndColumn) {
  TempDir dir;
  auto script = dir.script("train.sh", R"(
printf 'row_id,target,p0,p1\n0,0,0.9,0.1\n1,1,0.4,oops\n2,0,1,0\n' > "$HPO_OUTPUT_DIR/validation.csv"
echo 'hpo-metric {"final": true, "loss": 0.3}'
)");
  auto spec = predicting_spec(script);
  RecordingReporter rep;
  auto r = run_in_work_dir(make_task(spec), dir, "attempt", rep);
  EXPECT_EQ(r.outcome, trials::TrialState::kFailed);
  EXPECT_FALSE(r.retryable);
  EXPECT_NE(r.error.find("validation.csv:3:4: expected a number, got \"oops\""), std::string::npos)
      << r.error;
  EXPECT_TRUE(rep.artifacts.empty());
}

TEST(CommandOutputs, AMemberReadsItsPlanAndPredictsItsOutOfBagRows) {
  TempDir dir;
  auto spec = predicting_spec("");
  trials::EnsembleRecipe recipe;
  recipe.max_features = 0.5;
  auto member = ensemble::member_spec(recipe, 2);
  auto plan = ensemble::plan_member(member, 6, 4);
  ASSERT_FALSE(plan.oob_rows.empty());
  std::string oob = "row_id,target,p0,p1\n";
  for (auto r : plan.oob_rows) oob += std::to_string(r) + ",1,0.25,0.75\n";
  auto script = dir.script("member.sh", R"(
cd "$HPO_OUTPUT_DIR" || exit 3
cp "$HPO_BAGGING_FILE" plan.json
echo "$HPO_MEMBER_INDEX" > index.txt
printf 'row_id,target,p0,p1\n0,0,1,0\n1,1,0,1\n2,0,1,0\n' > validation.csv
printf 'row_id,target,p0,p1\n0,0,1,0\n1,1,0,1\n' > test.csv
printf ')" + oob + R"(' > oob.csv
echo 'hpo-metric {"final": true, "loss": 0.1}'
)");
  spec.trial.command.argv = {script};
  auto task = make_task(spec);
  task.trial.role = trials::TrialRole::kMember;
  task.trial.plan.member = member;
  RecordingReporter rep;
  auto r = run_in_work_dir(task, dir, "attempt", rep);
  ASSERT_EQ(r.outcome, trials::TrialState::kCompleted) << r.error;
  EXPECT_EQ(rep.artifacts["output.plan.json"], ensemble::bagging_file_json(plan));
  EXPECT_EQ(rep.artifacts["output.index.txt"], "2\n");
  auto o = ensemble::decode_prediction_file(rep.artifacts["oob_predictions"]);
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->row_ids, plan.oob_rows);
  auto summary = ensemble::plan_summary_from_json(rep.artifacts["bagging.json"]);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->n_features, 4);
  EXPECT_EQ(summary->features, plan.features);
  EXPECT_EQ(summary->features.size(), 2u);

  // The same member without its validation predictions fails, saying what is missing.
  auto lazy = dir.script("lazy.sh", R"(echo 'hpo-metric {"final": true, "loss": 0.1}')");
  spec.trial.command.argv = {lazy};
  RecordingReporter rep2;
  auto r2 = run_in_work_dir(task, dir, "attempt2", rep2);
  EXPECT_EQ(r2.outcome, trials::TrialState::kFailed);
  EXPECT_NE(r2.error.find("wrote no validation predictions"), std::string::npos) << r2.error;
}

TEST(ChildProcess, FindsProgramsInPathAndRejectsOthers) {
  auto sh = find_program("sh", "/nonexistent:/bin:/usr/bin");
  ASSERT_TRUE(sh.ok());
  EXPECT_TRUE(sh->ends_with("/sh"));
  EXPECT_FALSE(find_program("sh", "/nonexistent").ok());
  EXPECT_FALSE(find_program("/etc/passwd", "").ok());  // not executable
}

// Reads every line of `p` until it exits (bounded by the test's own timeout).
std::vector<std::string> lines_until_exit(ChildProcess& p) {
  std::vector<std::string> out;
  while (!p.poll(100, [&](Stream s, std::string_view l) {
    if (s == Stream::kStdout) out.emplace_back(l);
  })) {
  }
  return out;
}

// A process started before its job: the job arrives on stdin, its memory
// limit after the start; writing to one that has gone is an error, not a signal.
TEST(ChildProcess, TakesItsStdinAndItsMemoryLimitAfterTheStart) {
  SpawnOptions o{
      {"sh", "-c", "read job; echo \"got $job\"; ulimit -d"}, {"PATH=/bin:/usr/bin"}, ""};
  o.stdin_pipe = true;
  auto p = ChildProcess::spawn(o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_TRUE(p->limit_memory(std::int64_t{512} << 20).ok());
  ASSERT_TRUE(p->write_stdin("job.json 0\n").ok());
  EXPECT_FALSE(p->write_stdin("again\n").ok());  // written once, then closed
  auto lines = lines_until_exit(*p);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "got job.json 0");
  EXPECT_EQ(lines[1], "524288");  // KiB
  EXPECT_EQ(p->exit_status(), 0);

  SpawnOptions quick{{"sh", "-c", "exit 0"}, {"PATH=/bin:/usr/bin"}, ""};
  quick.stdin_pipe = true;
  auto gone = ChildProcess::spawn(quick);
  ASSERT_TRUE(gone.ok());
  lines_until_exit(*gone);
  auto st = gone->write_stdin(std::string(1 << 20, 'x'));  // past the pipe's buffer
  EXPECT_FALSE(st.ok());
}

TEST(TrialEnvironment, KeepsTheAllowlistOnly) {
  auto env = trial_environment({"PATH=/bin", "HOME=/h", "LC_ALL=C", "CUDA_HOME=/cuda",
                                "PYTHONPATH=/p", "HPO_REDIS=redis://:pw@h:1", "HPO_TOKEN=t",
                                "AWS_SECRET_ACCESS_KEY=s", "PATHOLOGICAL=1", "noequals"});
  EXPECT_EQ(env, (std::vector<std::string>{"PATH=/bin", "HOME=/h", "LC_ALL=C", "CUDA_HOME=/cuda",
                                           "PYTHONPATH=/p"}));
}

}  // namespace
}  // namespace hpo::workers
