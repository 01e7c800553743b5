#include "workers/agent/claimer.hpp"

#include <algorithm>

#include "core/backoff.hpp"
#include "workers/agent/shared.hpp"

namespace hpo::workers::agent {

Claimer::Claimer(Shared& shared, bool torch) : shared_(shared), torch_(torch) {}

bool Claimer::no_claims() const {
  return shared_.stopping.load() || shared_.draining.load();
}

bool Claimer::next_offer(trials::Offer& offer) {
  std::unique_lock lk(shared_.mu);
  shared_.claim_cv.wait(lk, [&] { return no_claims() || shared_.slots.free_count() > 0; });
  if (no_claims()) return false;
  offer = shared_.offer_locked(torch_);
  shared_.claiming = true;
  return true;
}

std::vector<trials::ResourceRequest> Claimer::requests_of(const trials::Claims& got) {
  std::vector<trials::ResourceRequest> requests;
  for (const auto& claim : got.claims) {
    auto spec = shared_.spec_for(claim);
    trials::ResourceRequest r =
        spec ? trials::request_for((*spec)->trial) : trials::ResourceRequest{};
    r.slots = std::max(1, claim.trial.slots);
    requests.push_back(std::move(r));
  }
  return requests;
}

std::vector<Claimer::SharePlan> Claimer::shares_of(trials::Claims& got) {
  std::vector<SharePlan> shares;
  for (auto& share : got.ranks) {
    auto run = std::make_shared<GangShare>();
    run->share = std::move(share);
    auto spec = shared_.specs.get(run->share.trial.sweep_id, run->share.spec_json);
    if (!spec) {
      log_warn(
          "a gang share's sweep spec does not parse; its ranks do not start",
          trial_fields(run->share.trial, shared_.options.name, {{"error", spec.error().message}}));
      continue;
    }
    trials::ResourceRequest all = trials::request_for((*spec)->trial);
    run->request = trials::rank_request(all);
    run->request.slots = run->share.count;
    run->request.cpus *= run->share.count;
    run->request.memory_gb *= run->share.count;
    shares.emplace_back(std::move(run), std::move(*spec));
  }
  return shares;
}

void Claimer::hand_out(std::vector<SharePlan>& shares, trials::Claims* got,
                       const std::vector<trials::ResourceRequest>& requests,
                       std::vector<int>& woken, std::vector<trials::Claim>& misfits) {
  // Under shared_.mu.
  for (auto& [run, spec] : shares) {
    // Handed out again (the store does until this worker first renews its
    // rank lease, in case a claim's reply was lost): it runs already.
    if (shared_.shares.count(run->key())) continue;
    const std::vector<int>& slots = run->share.slots;
    run->share.devices = trials::devices_of({slots, run->share.devices, run->share.devices_named},
                                            shared_.slots.device_count());
    run->share.devices_named = true;
    if (static_cast<int>(slots.size()) != run->share.count ||
        !shared_.slots.book(slots, run->share.devices,
                            run->request)) {  // the leader's heartbeat fails the attempt
      log_warn("a gang share's slots are not free here; its ranks do not start",
               trial_fields(run->share.trial, shared_.options.name,
                            {{"ranks", std::to_string(run->share.count)}}));
      continue;
    }
    shared_.shares[run->key()] = run;
    shared_.heartbeat_now = true;  // its first rank lease renewal tells the store it arrived
    trials::Claim carrier;
    carrier.trial = run->share.trial;
    carrier.spec_json = run->share.spec_json;
    shared_.inbox[static_cast<std::size_t>(slots.front())] =
        Assignment{std::move(carrier), slots, run};
    woken.push_back(slots.front());
  }
  if (!got) return;
  for (std::size_t c = 0; c < got->claims.size(); ++c) {
    auto& claim = got->claims[c];
    ++shared_.stats.claimed;
    const std::vector<int> slots = claim.slots;
    std::vector<int> devices = trials::devices_of({slots, claim.devices, claim.devices_named},
                                                  shared_.slots.device_count());
    if (static_cast<int>(slots.size()) != std::max(1, claim.trial.slots) ||
        !shared_.slots.book(slots, devices, requests[c])) {
      // The claim placed it on slots or devices that are not free here (never
      // from a claim of this book's offer): give it back rather than overcommit.
      misfits.push_back(std::move(claim));
      continue;
    }
    auto run = std::make_shared<RunningAttempt>();
    run->trial = claim.trial;
    run->slots = slots;
    run->devices = std::move(devices);
    run->request = requests[c];
    shared_.running[run->trial.id] = run;
    shared_.inbox[static_cast<std::size_t>(slots.front())] =
        Assignment{std::move(claim), slots, {}};
    woken.push_back(slots.front());
  }
}

void Claimer::release_misfits(trials::TrialQueue& queue, const std::vector<trials::Claim>& misfits,
                              int free) {
  for (const auto& claim : misfits) {
    auto st = queue.release(claim.trial.id, claim.trial.attempt, shared_.options.name,
                            "claimed a trial that does not fit the free slots",
                            /*counted=*/false);
    log_warn("claimed a trial that does not fit; released",
             trial_fields(claim.trial, shared_.options.name,
                          {{"slots", std::to_string(claim.trial.slots)},
                           {"free", std::to_string(free)},
                           {"released", st ? "yes" : st.error().message}}));
  }
}

void Claimer::run() {
  auto conn = shared_.connect_until_stopped("claimer");
  if (!conn) return;
  trials::TrialQueue& queue = conn->queue();
  const auto& o = shared_.options;
  Backoff backoff(std::chrono::milliseconds(50), std::chrono::milliseconds(2000));
  ThrottledLog errors;
  {
    // Not before the registry took this worker (a second worker of its name
    // on another host is refused there, and must not claim meanwhile).
    std::unique_lock lk(shared_.mu);
    shared_.claim_cv.wait(lk, [&] { return no_claims() || shared_.registered.load(); });
  }
  trials::Offer offer;
  while (next_offer(offer)) {
    const int free = offer.slots;
    auto got = queue.claim_batch(o.name, offer, std::min(free, o.max_batch), o.lease_ms);
    std::vector<trials::ResourceRequest> requests;
    std::vector<SharePlan> shares;
    if (got) {
      requests = requests_of(*got);
      shares = shares_of(*got);
    }
    std::vector<int> woken;  // the slot threads handed a trial
    std::vector<trials::Claim> misfits;
    {
      std::lock_guard lk(shared_.mu);
      shared_.claiming = false;
      hand_out(shares, got ? &*got : nullptr, requests, woken, misfits);
    }
    for (int w : woken) shared_.slot_cv[static_cast<std::size_t>(w)].notify_one();
    if (!shares.empty()) shared_.cv.notify_all();  // the lease keeper renews the new shares
    release_misfits(queue, misfits, free);
    if (no_claims())  // slot threads wait for the claim in flight before they end
      for (int i = 0; i < o.slots; ++i) shared_.slot_cv[static_cast<std::size_t>(i)].notify_all();
    if (!got) {
      errors.warn("claim failed", {{"worker", o.name}, {"error", got.error().message}});
      if (!shared_.idle_wait(backoff.next())) break;
      continue;
    }
    backoff.reset();
    // Less than asked for: wait until something is queued after this claim
    // (at once if it already was), bounded so that a stop is noticed.
    if (!got->wake_cursor.empty() && !no_claims()) {
      auto waited = queue.wait_for_work(got->wake_cursor, static_cast<int>(o.idle_wait.count()));
      if (!waited) {
        errors.warn("waiting for work failed",
                    {{"worker", o.name}, {"error", waited.error().message}});
        if (!shared_.idle_wait(backoff.next())) break;
      }
    }
  }
}

}  // namespace hpo::workers::agent
