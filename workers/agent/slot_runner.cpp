#include "workers/agent/slot_runner.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trials/spec/spec_names.hpp"
#include "workers/agent/completer.hpp"
#include "workers/agent/shared.hpp"
#include "workers/agent/trial_reporter.hpp"
#include "workers/agent/work_root.hpp"
#include "workers/outcome.hpp"

namespace hpo::workers::agent {
namespace {

// The roles an attempt uses of the slot thread's connection.
AttemptRoles roles_of(trials::Store& conn) {
  return {conn.queue(), [&conn]() -> trials::ArtifactStore& { return conn.artifacts(); }};
}

}  // namespace

SlotRunner::SlotRunner(Shared& shared, const ExecutorRegistry& executors, const WorkRoot& work_root,
                       Completer& completer)
    : shared_(shared),
      executors_(executors),
      work_root_(work_root),
      completer_(completer),
      follower_(shared, executors, work_root) {}

void SlotRunner::run(int slot) {
  auto conn = shared_.connect_until_stopped("slot");
  // Without a connection a handed trial cannot report or be released: it is
  // left to its lease (a hard stop before the store was ever reachable).
  const auto me = static_cast<std::size_t>(slot);
  for (;;) {
    std::optional<Assignment> work;
    {
      std::unique_lock lk(shared_.mu);
      // Ends once no more work can come: no claims, none in flight, nothing handed.
      shared_.slot_cv[me].wait(lk, [&] {
        return shared_.inbox[me].has_value() ||
               ((shared_.stopping.load() || shared_.draining.load()) && !shared_.claiming);
      });
      if (!shared_.inbox[me]) break;
      work = std::move(shared_.inbox[me]);
      shared_.inbox[me].reset();
    }
    if (work->share) {
      if (conn) follower_.run(*work->share, work->slots, roles_of(*conn));
      std::lock_guard lk(shared_.mu);
      shared_.shares.erase(work->share->key());
      shared_.cv.notify_all();  // a drain waits for the shares too
    } else if (conn) {
      run_trial(work->claim, roles_of(*conn));
    } else {
      shared_.forget(work->claim.trial);
    }
    shared_.free_slots(work->slots);
  }
}

void SlotRunner::run_trial(const trials::Claim& claim, AttemptRoles store) {
  const std::string& me = shared_.options.name;
  std::shared_ptr<RunningAttempt> run;
  {
    std::lock_guard lk(shared_.mu);
    run = shared_.running.at(claim.trial.id);  // registered by the claimer when it handed it out
  }
  bool handed_on = false;
  std::string log_tail;
  auto spec = shared_.spec_for(claim);
  if (!spec && spec.error().code == ErrorCode::kUnavailable) {
    // A claim without the spec: the store's functions are another version's
    // (a process of an older hpo reloaded them). Not the trial's fault: give
    // it back without counting an attempt; a later claim will carry it.
    log_warn("claim carried no sweep spec; trial released", trial_fields(claim.trial, me));
    (void)shared_.retry_through_outage([&] {
      return store.queue.release(claim.trial.id, claim.trial.attempt, me,
                                 "the claim carried no sweep spec", /*counted=*/false);
    });
  } else {
    // A spec that does not parse will not parse on a retry either.
    trials::TrialResult result =
        spec ? execute(*run, **spec, store, log_tail)
             : failed_result("cannot read the sweep spec: " + spec.error().message, false);
    run->gpu_use.to_metrics(result.metrics);  // what it used of its GPUs (gpu_accounting.hpp)
    handed_on = completer_.deliver(run, result, log_tail, store.queue);
  }
  if (!handed_on) shared_.forget(run->trial);
}

trials::TrialResult SlotRunner::execute(RunningAttempt& run, const trials::SweepSpec& sp,
                                        AttemptRoles store, std::string& log_tail) {
  const auto& trial = run.trial;
  TrialTask task;
  task.trial = trial;
  task.spec = &sp;
  task.gpus = shared_.gpus_of(run.devices);
  task.gpu_ids = shared_.gpu_ids_of(run.devices);
  task.threads = shared_.threads_for(run.slots, run.request.cpus);
  task.address = shared_.options.address;
  std::optional<Clock::time_point> deadline;
  if (sp.trial.timeout_s > 0)
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(sp.trial.timeout_s));
  log_info("trial started", trial_fields(trial, shared_.options.name,
                                         {{"kind", trials::kTrialKindNames(sp.trial.kind)},
                                          {"slots", std::to_string(run.slots.size())},
                                          {"gpus", fmt::format("{}", fmt::join(task.gpus, ","))}}));

  TrialReporter reporter(shared_, run, store, deadline);
  {
    std::lock_guard lk(run.reporter_mu);
    run.reporter = &reporter;
  }
  trials::TrialResult result;
  auto factory = executors_.find(sp.trial.kind);
  if (factory == executors_.end() || !factory->second) {
    result = failed_result(fmt::format("this worker cannot run trials of kind {}",
                                       trials::kTrialKindNames(sp.trial.kind)),
                           /*retryable=*/true);  // another worker may
  } else {
    result = run_executor(factory->second, run, sp, task, reporter);
  }
  reporter.flush(/*always=*/true);  // before the result, so the curve is complete
  {
    std::lock_guard lk(run.reporter_mu);
    run.reporter = nullptr;
  }
  log_tail = reporter.log_tail();
  WorkRoot::remove(task.work_dir);
  return result;
}

trials::TrialResult SlotRunner::run_executor(const ExecutorFactory& factory, RunningAttempt& run,
                                             const trials::SweepSpec& sp, TrialTask& task,
                                             TrialReporter& reporter) {
  try {
    auto executor = factory();
    if (executor->needs_work_dir()) task.work_dir = work_root_.make_attempt_dir(run.trial);
    run.checkpoints = executor->checkpoints();
    if (run.checkpoints && shared_.draining.load()) run.set_stop(StopReason::kShutdown);
    auto box = executor->starts_processes() ? shared_.enter_box(run.trial, sp)
                                            : Result<std::unique_ptr<TrialBox>>(nullptr);
    if (!box) return failed_result("cannot contain the trial: " + box.error().message, true);
    task.box = box->get();
    if (const auto& sandbox = shared_.options.sandbox) {
      task.identity = sandbox->identity(run.slots.empty() ? 0 : run.slots.front());
      task.confinement =
          sandbox->namespaces().for_attempt(task.work_dir, shared_.gpu_files_of(run.devices));
    }
    auto result = executor->run(task, reporter);
    box->reset();  // nothing the trial started outlives it
    return result;
  } catch (const std::exception& e) {  // the one boundary for executors' exceptions
    return failed_result(fmt::format("executor error: {}", e.what()), true);
  }
}

}  // namespace hpo::workers::agent
