// How the agent's threads share state (all under mu_; see agent.hpp for what
// each thread does):
//
//  - slot_owner_[i] says which slot thread holds slot i (-1: free). Only the
//    claimer takes slots, and it claims from the store with the free count
//    it saw; meanwhile other threads can only free slots, so a claimed
//    trial's k slots are always there to take. It hands the trial to the
//    inbox_ of the first of them; the threads whose slots it borrowed have
//    nothing in theirs and wait.
//  - running_ holds every attempt from its claim until the store answered
//    its result (or it was released or dropped); the heartbeat thread renews
//    the leases of a copy of it every lease/3. A Running's stop reason is an
//    atomic that only ever goes from kNone to one reason (first writer wins),
//    read by the executor through its Reporter between steps.
//  - outbox_ holds results for the completer (its own condition variable).
//  - Time for leases is the store's (Redis TIME); the steady clock here only
//    paces heartbeats and the trial's own timeout.
#include "workers/agent.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <filesystem>
#include <optional>
#include <random>
#include <regex>

#include <fmt/format.h>

#include "core/backoff.hpp"
#include "core/log.hpp"
#include "trials/artifacts.hpp"
#include "trials/rung.hpp"
#include "workers/command_executor.hpp"
#include "workers/outcome.hpp"
#include "workers/synthetic_executor.hpp"

namespace hpo::workers {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kErrorLogEvery = std::chrono::seconds(10);
constexpr std::size_t kLogTailLines = 200;  // the trial log kept (artifact "log.txt")
constexpr std::size_t kLogLineMax = 2000;   // longer lines are cut
constexpr char kWorkLockName[] = ".hpo-worker.lock";
constexpr double kReportBurst = 200;      // reports a trial may send at once,
constexpr double kReportsPerSecond = 50;  // then at most this many per second

// An artifact as an attempt of trial `t` reads it: its own; for the
// checkpoint of a promoted multi-fidelity trial that stored none yet, the one
// of the trial it resumes (trials/rung.hpp), so a promotion continues where
// the rung below stopped.
// The trial whose checkpoint an attempt of `t` falls back to when it has
// none of its own (empty: none).
std::string resumed_trial(const trials::Trial& t, const std::string& name) {
  if (name != trials::artifact::kCheckpoint) return {};
  auto rung = trials::rung_from_json(t.extra);
  // Budgets of training rows retrain: a model fitted on fewer rows has no
  // epoch to go on from.
  if (!rung || !*rung || (*rung)->resume_from.empty() || (*rung)->resource == "subset") return {};
  return (*rung)->resume_from;
}

Result<std::optional<std::string>> trial_artifact(trials::Store& conn, const trials::Trial& t,
                                                  const std::string& name) {
  auto got = conn.artifacts().get_artifact(t.id, name);
  if (!got || *got) return got;
  const std::string from = resumed_trial(t, name);
  return from.empty() ? got : conn.artifacts().get_artifact(from, name);
}

// The same, streamed.
Result<bool> read_trial_artifact(trials::Store& conn, const trials::Trial& t,
                                 const std::string& name, ByteSink& out) {
  auto got = conn.artifacts().read_artifact(t.id, name, out);
  if (!got || *got) return got;
  const std::string from = resumed_trial(t, name);
  return from.empty() ? got : conn.artifacts().read_artifact(from, name, out);
}
// Reports that come within kReportLinger of the last send are held and sent
// together (one round trip, one event), up to kReportBatch at a time; the
// heartbeat sends what a trial that went quiet still holds.
constexpr std::size_t kReportBatch = 64;
constexpr auto kReportLinger = std::chrono::milliseconds(100);
// How long a gang's rendezvous address is kept (longer than any rank waits for it).
constexpr std::int64_t kRendezvousTtlMs = 3'600'000;

const char* kind_name(trials::TrialKind k) {
  switch (k) {
    case trials::TrialKind::kCommand:
      return "command";
    case trials::TrialKind::kSynthetic:
      return "synthetic";
    case trials::TrialKind::kTorch:
      return "torch";
  }
  return "?";
}

StopReason stop_for(trials::Control c) {
  switch (c) {
    case trials::Control::kPrune:
      return StopReason::kPruned;
    case trials::Control::kCancel:
      return StopReason::kCancelled;
    case trials::Control::kRelease:  // as our own drain: checkpoint, stop, release
      return StopReason::kShutdown;
    case trials::Control::kNone:
      break;
  }
  return StopReason::kNone;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Logs an error at most every kErrorLogEvery (Redis down must not flood the log).
class ThrottledLog {
 public:
  void warn(std::string_view what, const LogFields& fields) {
    auto now = Clock::now();
    if (last_ && now - *last_ < kErrorLogEvery) return;
    last_ = now;
    log_warn(what, fields);
  }

 private:
  std::optional<Clock::time_point> last_;
};

LogFields trial_fields(const trials::Trial& t, const std::string& worker, LogFields more = {}) {
  LogFields f{{"trial", t.id},
              {"sweep", t.sweep_id},
              {"attempt", std::to_string(t.attempt)},
              {"worker", worker}};
  f.insert(f.end(), more.begin(), more.end());
  return f;
}

std::string safe_dir_name(std::string s) {
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  return s;
}

}  // namespace

// One attempt in flight.
struct Agent::Running {
  trials::Trial trial;  // as claimed: id, sweep, attempt
  std::vector<int> slots;
  trials::ResourceRequest request;  // what it was claimed with (its cores and memory are taken)
  std::atomic<bool> checkpoints{false};  // its executor checkpoints on a kShutdown stop
  std::atomic<StopReason> stop{StopReason::kNone};
  std::atomic<bool> delivering{false};             // its result is with the completer
  Clock::time_point last_lease_ok = Clock::now();  // heartbeat thread only
  // The attempt's reporter while its executor runs (the heartbeat flushes
  // held reports through it); guarded by reporter_mu.
  std::mutex reporter_mu;
  TrialReporter* reporter = nullptr;

  void set_stop(StopReason r) {
    StopReason none = StopReason::kNone;
    stop.compare_exchange_strong(none, r);
  }
};

// A gang follower's share running here: what the heartbeat renews.
struct Agent::ShareRun {
  trials::RankShare share;
  trials::ResourceRequest request;  // all its ranks' (cores and memory are taken)
  std::atomic<bool> stale{false};   // the attempt is over (fence) or its rank lease is gone
  Clock::time_point last_ok = Clock::now();  // heartbeat thread only
  bool release_asked = false;                // draining: the leader was asked (heartbeat thread)
  std::string key() const {
    return fmt::format("{}:{}:{}", share.trial.id, share.trial.attempt, share.first);
  }
};

// The executor's window on the agent: reports go through the slot thread's
// connection (guarded: an executor may report from a helper thread).
class Agent::TrialReporter : public Reporter {
 public:
  TrialReporter(Agent& agent, Running& run, trials::Store& conn,
                std::optional<Clock::time_point> deadline)
      : agent_(agent), run_(run), conn_(conn), deadline_(deadline) {}

  bool report(std::int64_t step, const trials::Metrics& metrics) override {
    trials::StepReport r;
    r.step = step;
    r.metrics = metrics;
    {
      std::lock_guard lk(mu_);
      // A program printing metric lines in a tight loop is thinned out here
      // (a token bucket: bursts of kReportBurst, then kReportsPerSecond), so
      // one trial cannot flood Redis; the result carries the final metrics.
      const auto now = Clock::now();
      tokens_ = std::min(
          kReportBurst,
          tokens_ + kReportsPerSecond * std::chrono::duration<double>(now - refilled_).count());
      refilled_ = now;
      if (tokens_ < 1) return stop_reason() == StopReason::kNone;
      tokens_ -= 1;
      pending_.push_back(std::move(r));
      if (pending_.size() >= kReportBatch || now - last_send_ >= kReportLinger) send_locked(now);
    }
    return stop_reason() == StopReason::kNone;
  }

  // Sends the held reports: `always` at the attempt's end; otherwise (the
  // heartbeat) only once the trial has been quiet for kReportLinger, and only
  // when no report is being sent right now (the heartbeat must not wait).
  void flush(bool always) {
    std::unique_lock lk(mu_, std::defer_lock);
    if (always) {
      lk.lock();
    } else if (!lk.try_lock()) {
      return;
    }
    const auto now = Clock::now();
    if (!pending_.empty() && (always || now - last_send_ >= kReportLinger)) send_locked(now);
  }

  StopReason stop_reason() const override {
    StopReason r = run_.stop.load();
    if (r != StopReason::kNone) return r;
    if (agent_.stopping_.load()) return StopReason::kShutdown;
    if (deadline_ && Clock::now() >= *deadline_) return StopReason::kTimeout;
    return StopReason::kNone;
  }

  void log(std::string_view line) override {
    std::lock_guard lk(mu_);
    tail_.emplace_back(line.substr(0, kLogLineMax));
    if (tail_.size() > kLogTailLines) tail_.pop_front();
  }

  Status put_artifact(const std::string& name, const std::string& bytes) override {
    std::lock_guard lk(mu_);
    return agent_.retry_through_outage([&] {
      return conn_.queue().put_artifact(run_.trial.id, run_.trial.attempt, agent_.options_.name,
                                        name, bytes);
    });
  }

  Result<std::optional<std::string>> get_artifact(const std::string& name) override {
    std::lock_guard lk(mu_);
    Result<std::optional<std::string>> got = std::optional<std::string>{};
    (void)agent_.retry_through_outage([&]() -> Status {
      got = trial_artifact(conn_, run_.trial, name);
      return got ? Status{} : Status(got.error());
    });
    return got;
  }

  // The store's answer to a stream is retried through an outage; the
  // producer runs again each time (a Redis outage at the publishing call).
  Status put_artifact_stream(const std::string& name, const ByteProducer& produce) override {
    std::lock_guard lk(mu_);
    return agent_.retry_through_outage([&] {
      return conn_.queue().put_artifact_stream(run_.trial.id, run_.trial.attempt,
                                               agent_.options_.name, name, produce);
    });
  }

  std::int64_t inline_artifact_limit() const override {
    return conn_.queue().inline_artifact_limit();
  }

  // Retried through an outage only while `out` has received nothing (the
  // store is asked where the bytes are before any is sent).
  Result<bool> read_artifact(const std::string& name, ByteSink& out) override {
    std::lock_guard lk(mu_);
    CountingSink counting(out);
    Result<bool> got = false;
    (void)agent_.retry_through_outage([&]() -> Status {
      got = read_trial_artifact(conn_, run_.trial, name, counting);
      if (!got && counting.count() > 0) return Error::internal(got.error().message);  // no retry
      return got ? Status{} : Status(got.error());
    });
    return got;
  }

  Status publish_rendezvous(const std::string& address) override {
    std::lock_guard lk(mu_);
    return agent_.retry_through_outage([&] {
      return conn_.queue().publish_rendezvous(run_.trial.id, run_.trial.attempt,
                                              agent_.options_.name, address, kRendezvousTtlMs);
    });
  }

  std::string log_tail() {
    std::lock_guard lk(mu_);
    std::string out;
    for (const auto& l : tail_) (out += l) += '\n';
    return out;
  }

 private:
  void send_locked(Clock::time_point now) {
    last_send_ = now;
    auto c = conn_.queue().report_batch(run_.trial.id, run_.trial.attempt, agent_.options_.name,
                                        pending_);
    pending_.clear();
    if (c) {
      run_.set_stop(stop_for(*c));
    } else if (c.error().code == ErrorCode::kLeaseLost || c.error().code == ErrorCode::kNotFound) {
      run_.set_stop(StopReason::kLeaseLost);
    } else {  // intermediate reports are best effort: the result carries the final metrics
      errors_.warn("report failed",
                   trial_fields(run_.trial, agent_.options_.name, {{"error", c.error().message}}));
    }
  }

  Agent& agent_;
  Running& run_;
  trials::Store& conn_;
  std::optional<Clock::time_point> deadline_;
  std::mutex mu_;
  std::deque<std::string> tail_;
  ThrottledLog errors_;
  double tokens_ = kReportBurst;
  Clock::time_point refilled_ = Clock::now();
  std::vector<trials::StepReport> pending_;  // held, not sent yet
  Clock::time_point last_send_{};            // long ago: the first report goes at once
};

ExecutorRegistry builtin_executors(double kill_grace_s) {
  ExecutorRegistry r;
  r[trials::TrialKind::kCommand] = [kill_grace_s] {
    CommandOptions o;
    o.kill_grace_s = kill_grace_s;
    return std::make_unique<CommandExecutor>(std::move(o));
  };
  r[trials::TrialKind::kSynthetic] = [] { return std::make_unique<SyntheticExecutor>(); };
  return r;
}

Agent::Agent(AgentOptions options, ConnectionFactory connect, ExecutorRegistry executors,
             const GpuInventory* gpus)
    : options_(std::move(options)),
      connect_(std::move(connect)),
      executors_(std::move(executors)),
      gpus_(gpus) {
  options_.slots = std::max(1, options_.slots);
  options_.threads_per_slot = std::max(1, options_.threads_per_slot);
  options_.lease_ms = std::max<std::int64_t>(options_.lease_ms, 30);
  options_.max_batch = std::max(1, options_.max_batch);
  slot_owner_.assign(static_cast<std::size_t>(options_.slots), -1);
  inbox_.resize(static_cast<std::size_t>(options_.slots));
  slot_cv_ = std::make_unique<std::condition_variable[]>(static_cast<std::size_t>(options_.slots));
}

Agent::~Agent() {
  stop();
}

Status Agent::start() {
  if (started_.load()) return {};
  if (auto st = claim_work_root(); !st) return st;
  started_ = true;
  stopping_ = false;
  {
    std::lock_guard lk(mu_);
    completer_stop_ = false;
  }
  started_ms_ = wall_ms();
  {
    std::random_device rd;
    instance_ = fmt::format("{:08x}{:08x}", rd(), rd());
  }
  registered_ = false;
  log_info("worker started", {{"worker", options_.name},
                              {"host", options_.host},
                              {"slots", std::to_string(options_.slots)},
                              {"gpus", std::to_string(options_.slot_gpus.size())},
                              {"threads_per_slot", std::to_string(options_.threads_per_slot)},
                              {"lease_ms", std::to_string(options_.lease_ms)}});
  completer_ = std::thread([this] { complete_loop(); });
  threads_.emplace_back([this] { heartbeat_loop(); });
  threads_.emplace_back([this] { claim_loop(); });
  for (int i = 0; i < options_.slots; ++i) threads_.emplace_back([this, i] { slot_loop(i); });
  return {};
}

void Agent::request_stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  notify_everyone();
}

void Agent::notify_everyone() {
  cv_.notify_all();
  claim_cv_.notify_all();
  for (int i = 0; i < options_.slots; ++i) slot_cv_[static_cast<std::size_t>(i)].notify_all();
}

void Agent::drain(const std::function<bool()>& until_stopped) {
  if (!started_.load()) return;
  {
    std::lock_guard lk(mu_);
    draining_ = true;
    heartbeat_now_ = true;  // gang shares ask their leaders to release at once
    // Trials that checkpoint stop now, keeping their progress for the next attempt.
    for (auto& [id, run] : running_)
      if (run->checkpoints.load()) run->set_stop(StopReason::kShutdown);
  }
  notify_everyone();
  log_info("worker draining",
           {{"worker", options_.name}, {"grace_ms", std::to_string(options_.drain_grace.count())}});
  auto deadline = Clock::now() + options_.drain_grace;
  for (;;) {
    {
      // Gang shares run until their leader stops the gang (asked by the heartbeat).
      // A claim in flight may hand out a trial yet: it is waited for too.
      std::unique_lock lk(mu_);
      auto idle = [this] { return !claiming_ && running_.empty() && shares_.empty(); };
      if (idle()) break;
      cv_.wait_for(lk, std::chrono::milliseconds(100), idle);
      if (idle()) break;
    }
    if (Clock::now() >= deadline || (until_stopped && until_stopped())) break;
  }
  stop();
}

void Agent::stop() {
  if (!started_.load()) return;
  request_stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  {
    // Every result there will be is in the outbox: the completer sends them
    // (a hard stop does not wait out an outage) and ends.
    std::lock_guard lk(mu_);
    completer_stop_ = true;
  }
  outbox_cv_.notify_all();
  if (completer_.joinable()) completer_.join();
  started_ = false;
  draining_ = false;
  // Gone from the registry at once: no gang share is placed here meanwhile.
  if (registered_.exchange(false))
    if (auto c = connect_(); c && *c)
      if (auto st = (*c)->workers().remove_worker(options_.name, instance_); !st)
        log_warn("worker not deregistered (its entry lapses)",
                 {{"worker", options_.name}, {"error", st.error().message}});
  if (work_lock_fd_ >= 0) ::close(work_lock_fd_);
  work_lock_fd_ = -1;
  log_info("worker stopped", {{"worker", options_.name}});
}

std::string Agent::fatal_error() const {
  std::lock_guard lk(mu_);
  return fatal_;
}

bool Agent::busy() const {
  std::lock_guard lk(mu_);
  return claiming_ || !running_.empty() || !shares_.empty();
}

AgentStats Agent::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

bool Agent::idle_wait(std::chrono::milliseconds d) {
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, d, [this] { return stopping_.load(); });
  return !stopping_.load();
}

Status Agent::retry_through_outage(const std::function<Status()>& op) {
  Status st = op();
  auto give_up = Clock::now() + options_.outage_grace;
  Backoff backoff(std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
  ThrottledLog waiting;
  while (!st && st.error().code == ErrorCode::kUnavailable && Clock::now() < give_up) {
    waiting.warn("store unreachable; retrying",
                 {{"worker", options_.name}, {"error", st.error().message}});
    // A hard stop (stopping_ without a drain) gives up at once: the lease
    // expires and the reaper re-queues the trial.
    if (stopping_.load() && !draining_.load()) break;
    std::this_thread::sleep_for(backoff.next());  // pacing retries of a failed call
    st = op();
  }
  return st;
}

std::unique_ptr<trials::Store> Agent::connect_until_stopped(const char* role) {
  Backoff backoff(std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
  ThrottledLog errors;
  while (!stopping_.load()) {
    auto c = connect_();
    if (c) return std::move(c.value());
    errors.warn("cannot open the store", {{"thread", role}, {"error", c.error().message}});
    if (!idle_wait(backoff.next())) break;
  }
  return nullptr;
}

bool Agent::reserve(const trials::ResourceRequest& request, std::vector<int>& out) {
  out.clear();
  const int k = std::max(1, request.slots);
  const int n_gpu = std::min(options_.slots, static_cast<int>(options_.gpu_slots.size()));
  auto is_free = [&](int i) { return slot_owner_[static_cast<std::size_t>(i)] < 0; };
  auto want = [&](int i) {
    if (static_cast<int>(out.size()) < k && is_free(i)) out.push_back(i);
  };
  if (request.gpus > 0) {
    for (int i = 0; i < n_gpu; ++i)
      if (trials::gpu_matches(request, options_.gpu_slots[static_cast<std::size_t>(i)])) want(i);
  } else {
    for (int i = n_gpu; i < options_.slots; ++i) want(i);
    for (int i = n_gpu - 1; i >= 0; --i) want(i);
  }
  if (static_cast<int>(out.size()) < k) return false;
  std::sort(out.begin(), out.end());
  for (int s : out) slot_owner_[static_cast<std::size_t>(s)] = out.front();
  return true;
}

trials::Offer Agent::offer_locked() const {
  trials::Offer o;
  o.total_slots = options_.slots;
  o.torch = executors_.count(trials::TrialKind::kTorch) > 0;
  o.cuda = options_.cuda;
  o.labels = options_.labels;
  const int n_gpu = std::min(options_.slots, static_cast<int>(options_.gpu_slots.size()));
  for (int i = 0; i < options_.slots; ++i) {
    const bool free = slot_owner_[static_cast<std::size_t>(i)] < 0;
    o.slots += free;
    if (i < n_gpu) {
      o.all_gpus.push_back(options_.gpu_slots[static_cast<std::size_t>(i)]);
      if (free) o.gpus.push_back(options_.gpu_slots[static_cast<std::size_t>(i)]);
    }
  }
  double cpus = 0, memory = 0;
  for (const auto& [id, run] : running_) {
    cpus += run->request.cpus;
    memory += run->request.memory_gb;
  }
  for (const auto& [key, share] : shares_) {
    cpus += share->request.cpus;
    memory += share->request.memory_gb;
  }
  if (options_.cpus > 0) {
    o.total_cpus = options_.cpus;
    o.cpus = std::max(0.0, options_.cpus - cpus);
  }
  if (options_.memory_gb > 0) {
    o.total_memory_gb = options_.memory_gb;
    o.memory_gb = std::max(0.0, options_.memory_gb - memory);
  }
  return o;
}

void Agent::release(const std::vector<int>& slots) {
  {
    std::lock_guard lk(mu_);
    for (int s : slots) slot_owner_[static_cast<std::size_t>(s)] = -1;
  }
  claim_cv_.notify_one();
}

void Agent::forget(const trials::Trial& trial) {
  bool none_left = false;
  {
    std::lock_guard lk(mu_);
    // Only this attempt: once its slot is free the same trial's next attempt
    // may already be claimed here while this one's refusal is on its way.
    auto it = running_.find(trial.id);
    if (it != running_.end() && it->second->trial.attempt == trial.attempt) running_.erase(it);
    none_left = running_.empty();
  }
  if (none_left) cv_.notify_all();  // drain() waits for running_ to empty
}

void Agent::claim_loop() {
  auto conn = connect_until_stopped("claimer");
  if (!conn) return;
  Backoff backoff(std::chrono::milliseconds(50), std::chrono::milliseconds(2000));
  ThrottledLog errors;
  auto no_claims = [this] { return stopping_.load() || draining_.load(); };
  auto free_slots = [this] {
    return static_cast<int>(std::count(slot_owner_.begin(), slot_owner_.end(), -1));
  };
  {
    // Not before the registry took this worker (a second worker of its name
    // on another host is refused there, and must not claim meanwhile).
    std::unique_lock lk(mu_);
    claim_cv_.wait(lk, [&] { return no_claims() || registered_.load(); });
  }
  while (!no_claims()) {
    trials::Offer offer;
    {
      std::unique_lock lk(mu_);
      claim_cv_.wait(lk, [&] { return no_claims() || free_slots() > 0; });
      if (no_claims()) break;
      offer = offer_locked();
      claiming_ = true;
    }
    const int free = offer.slots;
    auto got = conn->queue().claim_batch(options_.name, offer, std::min(free, options_.max_batch),
                                         options_.lease_ms);
    // What each claim asks (its sweep's spec, parsed once per sweep).
    std::vector<trials::ResourceRequest> requests;
    if (got)
      for (const auto& claim : got->claims) {
        auto spec = spec_for(claim);
        trials::ResourceRequest r =
            spec ? trials::request_for((*spec)->trial) : trials::ResourceRequest{};
        r.slots = std::max(1, claim.trial.slots);
        requests.push_back(std::move(r));
      }
    // The gang shares promised to this worker's slots (placed by other workers' claims).
    std::vector<std::pair<std::shared_ptr<ShareRun>, std::shared_ptr<const trials::SweepSpec>>>
        shares;
    if (got)
      for (auto& share : got->ranks) {
        auto run = std::make_shared<ShareRun>();
        run->share = std::move(share);
        auto spec = specs_.get(run->share.trial.sweep_id, run->share.spec_json);
        if (!spec) {
          log_warn(
              "a gang share's sweep spec does not parse; its ranks do not start",
              trial_fields(run->share.trial, options_.name, {{"error", spec.error().message}}));
          continue;
        }
        trials::ResourceRequest all = trials::request_for((*spec)->trial);
        run->request = trials::rank_request(all);
        run->request.slots = run->share.count;
        run->request.cpus *= run->share.count;
        run->request.memory_gb *= run->share.count;
        shares.emplace_back(std::move(run), std::move(*spec));
      }
    std::vector<int> woken;  // the slot threads handed a trial
    std::vector<trials::Claim> misfits;
    {
      std::lock_guard lk(mu_);
      claiming_ = false;
      for (auto& [run, spec] : shares) {
        // Handed out again (the store does until this worker first renews its
        // rank lease, in case a claim's reply was lost): it runs already.
        if (shares_.count(run->key())) continue;
        std::vector<int> slots;
        if (!reserve(run->request, slots)) {  // the leader's heartbeat fails the attempt
          log_warn("a gang share does not fit the free slots; its ranks do not start",
                   trial_fields(run->share.trial, options_.name,
                                {{"ranks", std::to_string(run->share.count)}}));
          continue;
        }
        shares_[run->key()] = run;
        heartbeat_now_ = true;  // its first rank lease renewal tells the store it arrived
        trials::Claim carrier;
        carrier.trial = run->share.trial;
        carrier.spec_json = run->share.spec_json;
        inbox_[static_cast<std::size_t>(slots.front())] =
            Assignment{std::move(carrier), slots, run};
        woken.push_back(slots.front());
      }
      if (got) {
        for (std::size_t c = 0; c < got->claims.size(); ++c) {
          auto& claim = got->claims[c];
          ++stats_.claimed;
          std::vector<int> slots;
          if (!reserve(requests[c], slots)) {
            // Only when the slots the store counted differ from the free ones
            // here (another version's claim): give it back rather than overcommit.
            misfits.push_back(std::move(claim));
            continue;
          }
          auto run = std::make_shared<Running>();
          run->trial = claim.trial;
          run->slots = slots;
          run->request = requests[c];
          running_[run->trial.id] = run;
          inbox_[static_cast<std::size_t>(slots.front())] = Assignment{std::move(claim), slots};
          woken.push_back(slots.front());
        }
      }
    }
    for (int w : woken) slot_cv_[static_cast<std::size_t>(w)].notify_one();
    if (!shares.empty()) cv_.notify_all();  // the heartbeat renews the new shares' rank leases
    for (const auto& claim : misfits) {
      auto st = conn->queue().release(claim.trial.id, claim.trial.attempt, options_.name,
                                      "claimed a trial that does not fit the free slots",
                                      /*counted=*/false);
      log_warn("claimed a trial that does not fit; released",
               trial_fields(claim.trial, options_.name,
                            {{"slots", std::to_string(claim.trial.slots)},
                             {"free", std::to_string(free)},
                             {"released", st ? "yes" : st.error().message}}));
    }
    if (no_claims())  // slot threads wait for the claim in flight before they end
      for (int i = 0; i < options_.slots; ++i) slot_cv_[static_cast<std::size_t>(i)].notify_all();
    if (!got) {
      errors.warn("claim failed", {{"worker", options_.name}, {"error", got.error().message}});
      if (!idle_wait(backoff.next())) break;
      continue;
    }
    backoff.reset();
    // Less than asked for: wait until something is queued after this claim
    // (at once if it already was), bounded so that a stop is noticed.
    if (!got->wake_cursor.empty() && !no_claims()) {
      auto waited = conn->queue().wait_for_work(got->wake_cursor,
                                                static_cast<int>(options_.idle_wait.count()));
      if (!waited) {
        errors.warn("waiting for work failed",
                    {{"worker", options_.name}, {"error", waited.error().message}});
        if (!idle_wait(backoff.next())) break;
      }
    }
  }
}

void Agent::slot_loop(int slot) {
  auto conn = connect_until_stopped("slot");
  // Without a connection a handed trial cannot report or be released: it is
  // left to its lease (a hard stop before the store was ever reachable).
  const auto me = static_cast<std::size_t>(slot);
  for (;;) {
    std::optional<Assignment> work;
    {
      std::unique_lock lk(mu_);
      // Ends once no more work can come: no claims, none in flight, nothing handed.
      slot_cv_[me].wait(lk, [&] {
        return inbox_[me].has_value() || ((stopping_.load() || draining_.load()) && !claiming_);
      });
      if (!inbox_[me]) break;
      work = std::move(inbox_[me]);
      inbox_[me].reset();
    }
    if (work->share) {
      if (conn) run_share(work->share, work->slots, *conn);
      std::lock_guard lk(mu_);
      shares_.erase(work->share->key());
      cv_.notify_all();  // a drain waits for the shares too
    } else if (conn) {
      run_trial(work->claim, *conn);
    } else {
      forget(work->claim.trial);
    }
    release(work->slots);
  }
}

namespace {

// A follower's window on the agent while its ranks run.
class ShareControl : public RankControl {
 public:
  ShareControl(const std::atomic<bool>& stale, const std::atomic<bool>& stopping,
               trials::Store& conn, const trials::Trial& trial, std::string worker)
      : stale_(stale),
        stopping_(stopping),
        conn_(conn),
        trial_(trial),
        worker_(std::move(worker)) {}
  bool should_stop() const override { return stale_.load() || stopping_.load(); }
  Result<std::optional<std::string>> rendezvous() override {
    return conn_.queue().rendezvous(trial_.id, trial_.attempt);
  }
  Result<bool> read_artifact(const std::string& name, ByteSink& out) override {
    return read_trial_artifact(conn_, trial_, name, out);
  }
  void log(std::string_view line) override {
    log_info("gang ranks", trial_fields(trial_, worker_, {{"line", std::string(line)}}));
  }

 private:
  const std::atomic<bool>& stale_;
  const std::atomic<bool>& stopping_;
  trials::Store& conn_;
  const trials::Trial& trial_;
  std::string worker_;
};

}  // namespace

void Agent::run_share(const std::shared_ptr<ShareRun>& run, const std::vector<int>& slots,
                      trials::Store& conn) {
  const auto& share = run->share;
  auto spec = specs_.get(share.trial.sweep_id, share.spec_json);
  auto factory = spec ? executors_.find((*spec)->trial.kind) : executors_.end();
  if (!spec || factory == executors_.end() || !factory->second) {
    log_warn("this worker cannot run the gang's ranks", trial_fields(share.trial, options_.name));
    return;
  }
  RankTask task;
  task.trial = share.trial;
  task.spec = spec->get();
  task.first = share.first;
  task.count = share.count;
  task.world = share.world;
  for (int s : slots)
    if (static_cast<std::size_t>(s) < options_.slot_gpus.size())
      task.gpus.push_back(options_.slot_gpus[static_cast<std::size_t>(s)]);
  task.threads = std::max(options_.threads_per_slot * static_cast<int>(slots.size()),
                          static_cast<int>(std::ceil(run->request.cpus)));
  task.address = options_.address;
  log_info("gang ranks started",
           trial_fields(share.trial, options_.name,
                        {{"ranks", fmt::format("{}-{} of {}", share.first,
                                               share.first + share.count - 1, share.world)},
                         {"leader", share.leader}}));
  Status st;
  try {
    auto executor = factory->second();
    if (executor->needs_work_dir()) task.work_dir = make_work_dir(share.trial);
    auto box = enter_box(share.trial, **spec, "-share");
    if (!box) {
      st = box.error();
    } else {
      task.box = box->get();
      if (options_.sandbox)
        task.identity = options_.sandbox->identity(slots.empty() ? 0 : slots.front());
      ShareControl control(run->stale, stopping_, conn, share.trial, options_.name);
      st = executor->run_ranks(task, control);
      box->reset();  // every rank process of the share ends here
    }
    if (!task.work_dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(task.work_dir, ec);
    }
  } catch (const std::exception& e) {
    st = Error::internal(std::string("executor error: ") + e.what());
  }
  log_info("gang ranks ended",
           trial_fields(share.trial, options_.name, {{"ok", st ? "yes" : st.error().message}}));
}

Result<std::shared_ptr<const trials::SweepSpec>> Agent::spec_for(const trials::Claim& claim) {
  const std::string& sweep_id = claim.trial.sweep_id;
  if (auto hit = specs_.find(sweep_id)) return hit;
  if (claim.spec_json.empty())  // a store that does not carry specs in claims
    return Error::unavailable("the claim of " + claim.trial.id + " carries no sweep spec");
  auto spec = specs_.get(sweep_id, claim.spec_json);
  if (!spec)
    return Error::invalid("spec", "stored sweep spec does not parse: " + spec.error().message);
  return spec;
}

void Agent::run_trial(const trials::Claim& claim, trials::Store& conn) {
  std::shared_ptr<Running> run;
  {
    std::lock_guard lk(mu_);
    run = running_.at(claim.trial.id);  // registered by the claimer when it handed it out
  }
  bool handed_on = false;
  std::string log_tail;
  auto spec = spec_for(claim);
  if (!spec && spec.error().code == ErrorCode::kUnavailable) {
    // A claim without the spec: the store's functions are another version's
    // (a process of an older hpo reloaded them). Not the trial's fault: give
    // it back without counting an attempt; a later claim will carry it.
    log_warn("claim carried no sweep spec; trial released",
             trial_fields(claim.trial, options_.name));
    (void)retry_through_outage([&] {
      return conn.queue().release(claim.trial.id, claim.trial.attempt, options_.name,
                                  "the claim carried no sweep spec", /*counted=*/false);
    });
  } else {
    // A spec that does not parse will not parse on a retry either.
    trials::TrialResult result =
        spec ? execute(*run, **spec, conn, log_tail)
             : failed_result("cannot read the sweep spec: " + spec.error().message, false);
    handed_on = deliver(run, result, log_tail, conn);
  }
  if (!handed_on) forget(run->trial);
}

trials::TrialResult Agent::execute(Running& run, const trials::SweepSpec& sp, trials::Store& conn,
                                   std::string& log_tail) {
  const auto& trial = run.trial;
  TrialTask task;
  task.trial = trial;
  task.spec = &sp;
  for (int s : run.slots)
    if (static_cast<std::size_t>(s) < options_.slot_gpus.size())
      task.gpus.push_back(options_.slot_gpus[static_cast<std::size_t>(s)]);
  task.threads = std::max(options_.threads_per_slot * static_cast<int>(run.slots.size()),
                          static_cast<int>(std::ceil(run.request.cpus)));
  task.address = options_.address;
  std::optional<Clock::time_point> deadline;
  if (sp.trial.timeout_s > 0)
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(sp.trial.timeout_s));
  log_info("trial started", trial_fields(trial, options_.name,
                                         {{"kind", kind_name(sp.trial.kind)},
                                          {"slots", std::to_string(run.slots.size())},
                                          {"gpus", fmt::format("{}", fmt::join(task.gpus, ","))}}));

  TrialReporter reporter(*this, run, conn, deadline);
  {
    std::lock_guard lk(run.reporter_mu);
    run.reporter = &reporter;
  }
  trials::TrialResult result;
  auto factory = executors_.find(sp.trial.kind);
  if (factory == executors_.end() || !factory->second) {
    result = failed_result(
        fmt::format("this worker cannot run trials of kind {}", kind_name(sp.trial.kind)),
        /*retryable=*/true);  // another worker may
  } else {
    try {
      auto executor = factory->second();
      if (executor->needs_work_dir()) task.work_dir = make_work_dir(trial);
      run.checkpoints = executor->checkpoints();
      if (run.checkpoints && draining_.load()) run.set_stop(StopReason::kShutdown);
      auto box = executor->starts_processes() ? enter_box(trial, sp)
                                              : Result<std::unique_ptr<TrialBox>>(nullptr);
      if (!box) {
        result = failed_result("cannot contain the trial: " + box.error().message, true);
      } else {
        task.box = box->get();
        if (options_.sandbox)
          task.identity = options_.sandbox->identity(run.slots.empty() ? 0 : run.slots.front());
        result = executor->run(task, reporter);
        box->reset();  // nothing the trial started outlives it
      }
    } catch (const std::exception& e) {  // the one boundary for executors' exceptions
      result = failed_result(fmt::format("executor error: {}", e.what()), true);
    }
  }
  reporter.flush(/*always=*/true);  // before the result, so the curve is complete
  {
    std::lock_guard lk(run.reporter_mu);
    run.reporter = nullptr;
  }
  log_tail = reporter.log_tail();
  if (!task.work_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(task.work_dir, ec);
  }
  return result;
}

namespace {

// Only what the agent itself makes in a work root (attempt directories
// "<trial>-a<attempt>") is ever removed: a --work-dir may be shared with
// anything else. Returns how many entries went.
std::size_t remove_attempt_dirs(const std::filesystem::path& root) {
  static const std::regex kAttemptDir(R"(.+-a[0-9]+)");
  std::error_code ec;
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec))
    if (entry.is_directory(ec) && std::regex_match(entry.path().filename().string(), kAttemptDir))
      n += std::filesystem::remove_all(entry.path(), ec) > 0;
  return n;
}

}  // namespace

Status Agent::claim_work_root() {
  if (options_.work_root.empty()) return {};
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path root(options_.work_root);
  fs::create_directories(root, ec);
  int fd = ::open((root / kWorkLockName).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (fd >= 0) ::close(fd);
    return Error::conflict(fmt::format(
        "the work directory {} is locked by another live worker: is --name ({}) unique on this "
        "host?",
        root.string(), options_.name));
  }
  work_lock_fd_ = fd;
  remove_attempt_dirs(root);  // what a previous run under this name left behind
  // Siblings with our lock file whose lock is free belong to dead workers.
  for (const auto& entry : fs::directory_iterator(root.parent_path(), ec)) {
    if (!entry.is_directory(ec) || entry.path() == root) continue;
    const fs::path lock = entry.path() / kWorkLockName;
    if (!fs::exists(lock, ec)) continue;  // not a worker's: never ours to touch
    int other = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
    if (other < 0) continue;
    const bool dead = ::flock(other, LOCK_EX | LOCK_NB) == 0;
    ::close(other);
    if (!dead) continue;
    auto removed = remove_attempt_dirs(entry.path());
    fs::remove(lock, ec);
    fs::remove(entry.path(), ec);  // only when nothing else is left in it
    log_info("removed a dead worker's attempt directories", {{"worker", options_.name},
                                                             {"dir", entry.path().string()},
                                                             {"entries", std::to_string(removed)}});
  }
  return {};
}

Result<std::unique_ptr<TrialBox>> Agent::enter_box(const trials::Trial& trial,
                                                   const trials::SweepSpec& spec,
                                                   std::string_view suffix) {
  if (!options_.sandbox) return std::unique_ptr<TrialBox>();
  return options_.sandbox->enter(fmt::format("{}-a{}{}", trial.id, trial.attempt, suffix),
                                 memory_limit_bytes(spec.trial.memory_gb));
}

std::string Agent::make_work_dir(const trials::Trial& trial) {
  if (options_.work_root.empty()) return "";
  std::string dir = (std::filesystem::path(options_.work_root) /
                     safe_dir_name(fmt::format("{}-a{}", trial.id, trial.attempt)))
                        .string();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (!ec) return dir;
  log_warn("cannot create the work dir",
           trial_fields(trial, options_.name, {{"dir", dir}, {"error", ec.message()}}));
  return "";
}

bool Agent::deliver(const std::shared_ptr<Running>& run, const trials::TrialResult& result,
                    const std::string& log_tail, trials::Store& conn) {
  const auto& trial = run->trial;
  const StopReason stop = run->stop.load();
  const char* outcome = trials::to_string(result.outcome);
  if (stop == StopReason::kLeaseLost) {
    log_info("trial result dropped",
             trial_fields(trial, options_.name, {{"reason", "lease lost"}, {"outcome", outcome}}));
    std::lock_guard lk(mu_);
    ++stats_.dropped;
    return false;
  }
  if ((stopping_.load() || stop == StopReason::kShutdown) &&
      result.outcome != trials::TrialState::kCompleted) {
    // We stopped it (drain, shutdown, a checkpoint on a drain): give it back
    // without counting a failure.
    if (!log_tail.empty())
      (void)retry_through_outage([&] {
        return conn.queue().put_artifact(trial.id, trial.attempt, options_.name,
                                         trials::artifact::kLog, log_tail);
      });
    auto st = retry_through_outage([&] {
      return conn.queue().release(trial.id, trial.attempt, options_.name,
                                  "worker " + options_.name + " stopped", /*counted=*/true);
    });
    std::lock_guard lk(mu_);
    if (st) {
      ++stats_.released;
      log_info("trial released",
               trial_fields(trial, options_.name, {{"reason", "worker stopped"}}));
    } else {
      ++stats_.dropped;
      log_warn("trial release refused; left to lease expiry",
               trial_fields(trial, options_.name, {{"error", st.error().message}}));
    }
    return false;
  }
  run->delivering = true;
  {
    std::lock_guard lk(mu_);
    outbox_.push_back(Outgoing{run, trials::Completion{trial.id, trial.attempt, result, log_tail}});
  }
  outbox_cv_.notify_one();
  return true;
}

void Agent::delivered(const std::shared_ptr<Running>& run, const trials::TrialResult& result,
                      const Status& st) {
  const auto& trial = run->trial;
  const char* outcome = trials::to_string(result.outcome);
  {
    std::lock_guard lk(mu_);
    if (st)
      ++stats_.completed;
    else
      ++stats_.dropped;
  }
  forget(trial);
  if (st) {
    LogFields more{{"outcome", outcome},
                   {"value", result.value ? fmt::format("{}", *result.value) : "none"}};
    if (!result.error.empty()) more.emplace_back("error", result.error.substr(0, 200));
    log_info("trial finished", trial_fields(trial, options_.name, std::move(more)));
  } else {
    log_warn(
        st.error().code == ErrorCode::kLeaseLost ? "trial result refused (stale attempt)"
                                                 : "trial result refused",
        trial_fields(trial, options_.name, {{"outcome", outcome}, {"error", st.error().message}}));
  }
}

void Agent::complete_loop() {
  // Its own connection, opened when the first result comes (it must be there
  // to send the last ones while the agent stops).
  std::unique_ptr<trials::Store> conn;
  for (;;) {
    std::vector<Outgoing> batch;
    {
      std::unique_lock lk(mu_);
      outbox_cv_.wait(lk, [&] { return !outbox_.empty() || completer_stop_; });
      if (outbox_.empty()) break;  // stopping, and everything was sent
      const auto n = std::min(outbox_.size(), static_cast<std::size_t>(options_.max_batch));
      batch.assign(std::make_move_iterator(outbox_.begin()),
                   std::make_move_iterator(outbox_.begin() + static_cast<std::ptrdiff_t>(n)));
      outbox_.erase(outbox_.begin(), outbox_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    std::vector<trials::Completion> done;
    done.reserve(batch.size());
    for (const auto& o : batch) done.push_back(o.completion);
    // The store away: retried through the outage like any result (sending a
    // batch again is safe: what was accepted is refused the second time).
    Result<std::vector<Status>> replies = Error::unavailable("not sent");
    (void)retry_through_outage([&]() -> Status {
      if (!conn) {
        auto c = connect_();
        if (!c) {
          replies = c.error();
          return c.error();
        }
        conn = std::move(*c);
      }
      replies = conn->queue().complete_batch(options_.name, done);
      return replies ? Status{} : Status(replies.error());
    });
    for (std::size_t i = 0; i < batch.size(); ++i) {
      Status st = replies ? (*replies)[i] : Status(replies.error());
      delivered(batch[i].run, batch[i].completion.result, st);
    }
  }
}

Status Agent::heartbeat_once(trials::Store& conn, std::int64_t interval_ms) {
  std::vector<std::shared_ptr<Running>> running;
  trials::WorkerInfo info;
  {
    std::lock_guard lk(mu_);
    for (const auto& [id, r] : running_) {
      running.push_back(r);
      info.trials.push_back(id);
    }
    info.busy_slots = static_cast<int>(
        std::count_if(slot_owner_.begin(), slot_owner_.end(), [](int o) { return o >= 0; }));
  }
  std::vector<trials::HeldLease> leases;
  leases.reserve(running.size());
  for (const auto& r : running) {
    {
      std::lock_guard lk(r->reporter_mu);
      if (r->reporter) r->reporter->flush(/*always=*/false);
    }
    leases.push_back({r->trial.id, r->trial.attempt});
  }
  Result<std::vector<Result<trials::Control>>> answers = std::vector<Result<trials::Control>>{};
  if (!leases.empty())
    answers = conn.queue().heartbeat_batch(options_.name, leases, options_.lease_ms);
  for (std::size_t i = 0; i < running.size(); ++i) {
    const auto& r = running[i];
    const auto& t = r->trial;
    Result<trials::Control> c = answers ? (*answers)[i] : Result<trials::Control>(answers.error());
    if (c) {
      r->last_lease_ok = Clock::now();
      if (auto s = stop_for(*c); s != StopReason::kNone && r->stop.load() == StopReason::kNone) {
        log_info("trial stop requested",
                 trial_fields(t, options_.name, {{"control", trials::to_string(*c)}}));
        r->set_stop(s);
      }
    } else if (c.error().code == ErrorCode::kLeaseLost ||
               c.error().code == ErrorCode::kNotFound) {  // the trial was deleted
      // A result the completer is sending may have been accepted meanwhile:
      // its reply tells; only a trial still running has lost its lease.
      if (!r->delivering.load())
        log_warn("lease lost", trial_fields(t, options_.name, {{"error", c.error().message}}));
      r->set_stop(StopReason::kLeaseLost);
    } else if (Clock::now() - r->last_lease_ok > options_.outage_grace) {
      // The store has been unreachable for longer than we ride out outages:
      // the trial is most likely someone else's by now.
      log_warn("lease presumed lost",
               trial_fields(t, options_.name, {{"error", c.error().message}}));
      r->set_stop(StopReason::kLeaseLost);
    }
  }
  // Gang shares: each rank lease renewed on its own (few per worker).
  std::vector<std::shared_ptr<ShareRun>> shares;
  {
    std::lock_guard lk(mu_);
    for (const auto& [key, share] : shares_) shares.push_back(share);
  }
  for (const auto& share : shares) {
    const auto& t = share->share.trial;
    auto ok = conn.queue().rank_heartbeat(t.id, t.attempt, options_.name, options_.lease_ms);
    if (ok && *ok && draining_.load() && !share->release_asked) {
      // Our notice: the whole gang stops together at the leader's word (with a
      // checkpoint, released, no failure counted); killing our ranks would fail it.
      auto asked = conn.queue().release_gang(t.id, t.attempt, options_.name);
      share->release_asked = asked.ok();
      if (asked.ok())
        log_info("gang release asked of its leader",
                 trial_fields(t, options_.name, {{"leader", share->share.leader}}));
    }
    if (ok && *ok) {
      share->last_ok = Clock::now();
    } else if (ok || Clock::now() - share->last_ok > options_.outage_grace) {
      if (!share->stale.exchange(true))
        log_info("gang attempt over; its ranks here stop", trial_fields(t, options_.name));
    }
  }
  info.name = options_.name;
  info.host = options_.host;
  info.slots = options_.slots;
  if (gpus_ && gpus_->available()) {
    info.gpus = gpus_->snapshot();
  } else {  // GPUs given on the command line (--fake-gpus)
    for (std::size_t i = 0; i < options_.gpu_slots.size(); ++i)
      info.gpus.push_back(trials::GpuInfo{static_cast<int>(i), options_.gpu_slots[i].model,
                                          options_.gpu_slots[i].memory_mb, 0, 0});
  }
  info.torch = executors_.count(trials::TrialKind::kTorch) > 0;
  info.cuda = options_.cuda;
  info.cpus = options_.cpus;
  info.memory_gb = options_.memory_gb;
  info.labels = options_.labels;
  info.started_ms = started_ms_;
  info.instance = instance_;
  info.draining = draining_.load();
  return conn.workers().put_worker(info, 3 * interval_ms);
}

void Agent::release_orphans(trials::Store& conn) {
  auto held = conn.queue().worker_leases(options_.name);
  if (!held) return;  // the store is away: next round
  for (const auto& lease : *held) {
    {
      std::lock_guard lk(mu_);
      auto it = running_.find(lease.trial_id);
      if (it != running_.end() && it->second->trial.attempt == lease.attempt) {
        orphan_seen_.erase(lease.trial_id);
        continue;
      }
    }
    // A claim in flight is not ours to judge yet: only a lease still held
    // orphan_after after we first saw it without a slot running it.
    auto [it, fresh] = orphan_seen_.try_emplace(lease.trial_id, Clock::now(), lease.attempt);
    if (fresh || it->second.second != lease.attempt) {
      it->second = {Clock::now(), lease.attempt};
      continue;
    }
    if (Clock::now() - it->second.first < options_.orphan_after) continue;
    trials::Trial t;
    t.id = lease.trial_id;
    t.attempt = lease.attempt;
    auto st =
        conn.queue().release(lease.trial_id, lease.attempt, options_.name,
                             "worker " + options_.name + " does not run it (lost claim reply)",
                             /*counted=*/false);
    log_warn("orphaned lease released",
             trial_fields(t, options_.name, {{"ok", st ? "yes" : st.error().message}}));
    if (st) {
      std::lock_guard lk(mu_);
      ++stats_.released;
    }
    orphan_seen_.erase(it);
  }
  // Forget leases the store no longer lists.
  std::erase_if(orphan_seen_, [&](const auto& e) {
    return std::none_of(held->begin(), held->end(),
                        [&](const trials::HeldLease& l) { return l.trial_id == e.first; });
  });
}

void Agent::heartbeat_loop() {
  auto conn = connect_until_stopped("heartbeat");
  if (!conn) return;
  const std::int64_t interval = std::max<std::int64_t>(10, options_.lease_ms / 3);
  ThrottledLog errors;
  do {
    auto st = heartbeat_once(*conn, interval);
    if (!st && st.error().code == ErrorCode::kConflict) {
      // Another live worker has this name (on another host): this one stops.
      log_error("worker refused by the registry",
                {{"worker", options_.name}, {"error", st.error().message}});
      {
        std::lock_guard lk(mu_);
        fatal_ = st.error().message;
      }
      request_stop();
      break;
    }
    if (!st) {
      errors.warn("worker heartbeat failed",
                  {{"worker", options_.name}, {"error", st.error().message}});
    } else {
      if (!registered_.load()) {
        {
          // Under mu_: the claimer checks the flag under it before it waits.
          std::lock_guard lk(mu_);
          registered_ = true;
        }
        notify_everyone();
      }
      release_orphans(*conn);
    }
  } while ([&] {
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, std::chrono::milliseconds(interval),
                 [this] { return stopping_.load() || heartbeat_now_; });
    heartbeat_now_ = false;
    return !stopping_.load();
  }());
}

}  // namespace hpo::workers
