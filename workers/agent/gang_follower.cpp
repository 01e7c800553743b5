#include "workers/agent/gang_follower.hpp"

#include <fmt/format.h>

#include "workers/agent/shared.hpp"
#include "workers/agent/trial_reporter.hpp"
#include "workers/agent/work_root.hpp"

namespace hpo::workers::agent {
namespace {

// The follower's window on the agent while its ranks run.
class ShareControl : public RankControl {
 public:
  ShareControl(const std::atomic<bool>& stale, const std::atomic<bool>& stopping,
               AttemptRoles store, const trials::Trial& trial, std::string worker)
      : stale_(stale),
        stopping_(stopping),
        store_(store),
        trial_(trial),
        worker_(std::move(worker)) {}
  bool should_stop() const override { return stale_.load() || stopping_.load(); }
  Result<std::optional<std::string>> rendezvous() override {
    return store_.queue.rendezvous(trial_.id, trial_.attempt, worker_);
  }
  Result<bool> read_artifact(const std::string& name, ByteSink& out) override {
    return read_trial_artifact(store_.artifacts(), trial_, name, out);
  }
  void log(std::string_view line) override {
    log_info("gang ranks", trial_fields(trial_, worker_, {{"line", std::string(line)}}));
  }

 private:
  const std::atomic<bool>& stale_;
  const std::atomic<bool>& stopping_;
  AttemptRoles store_;
  const trials::Trial& trial_;
  std::string worker_;
};

}  // namespace

GangFollower::GangFollower(Shared& shared, const ExecutorRegistry& executors,
                           const WorkRoot& work_root)
    : shared_(shared), executors_(executors), work_root_(work_root) {}

void GangFollower::run(const GangShare& run, const std::vector<int>& slots, AttemptRoles store) {
  const auto& o = shared_.options;
  const auto& share = run.share;
  auto spec = shared_.specs.get(share.trial.sweep_id, share.spec_json);
  auto factory = spec ? executors_.find((*spec)->trial.kind) : executors_.end();
  if (!spec || factory == executors_.end() || !factory->second) {
    log_warn("this worker cannot run the gang's ranks", trial_fields(share.trial, o.name));
    return;
  }
  RankTask task;
  task.trial = share.trial;
  task.spec = spec->get();
  task.first = share.first;
  task.count = share.count;
  task.world = share.world;
  task.gpus = shared_.gpus_of(share.devices);
  task.gpu_ids = shared_.gpu_ids_of(share.devices);
  task.threads = shared_.threads_for(slots, run.request.cpus);
  task.address = o.address;
  log_info("gang ranks started",
           trial_fields(share.trial, o.name,
                        {{"ranks", fmt::format("{}-{} of {}", share.first,
                                               share.first + share.count - 1, share.world)},
                         {"leader", share.leader}}));
  Status st;
  try {
    auto executor = factory->second();
    if (executor->needs_work_dir()) task.work_dir = work_root_.make_attempt_dir(share.trial);
    auto box = shared_.enter_box(share.trial, **spec, "-share");
    if (!box) {
      st = box.error();
    } else {
      task.box = box->get();
      if (o.sandbox) task.identity = o.sandbox->identity(slots.empty() ? 0 : slots.front());
      ShareControl control(run.stale, shared_.stopping, store, share.trial, o.name);
      st = executor->run_ranks(task, control);
      box->reset();  // every rank process of the share ends here
    }
    WorkRoot::remove(task.work_dir);
  } catch (const std::exception& e) {
    st = Error::internal(std::string("executor error: ") + e.what());
  }
  log_info("gang ranks ended",
           trial_fields(share.trial, o.name, {{"ok", st ? "yes" : st.error().message}}));
}

}  // namespace hpo::workers::agent
