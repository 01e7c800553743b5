// The handlers of the other resources: artifacts (of a trial or a sweep),
// workers, the event stream, /healthz and /metrics. Split from api.cpp by
// resource; each is a short read of the store.
#include "web/api.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "trials/access.hpp"
#include "trials/artifacts.hpp"
#include "trials/store.hpp"
#include "trials/trial.hpp"
#include "web/access_control.hpp"
#include "web/api_errors.hpp"
#include "web/api_helpers.hpp"
#include "web/download.hpp"
#include "web/event_hub.hpp"
#include "web/event_pump.hpp"
#include "web/json_codec.hpp"
#include "web/metrics.hpp"
#include "web/store_lease.hpp"
#include "web/sweep_projects.hpp"

namespace hpo::web {

namespace {

// Artifact names are plain file names, never paths.
bool plain_artifact_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         std::all_of(name.begin(), name.end(), [](unsigned char c) {
           return std::isalnum(c) || c == '.' || c == '_' || c == '-';
         });
}

}  // namespace

// Raw bytes of one stored artifact: a trial's (model.pt, predictions, log.txt)
// or a sweep's own records (ensemble.json, manifest.json); what `hpo export`
// downloads. Names are plain file names, never paths.
Response Api::artifact(const Request& request, Owner owner, const std::string& id,
                       const std::string& name) {
  if (!plain_artifact_name(name))
    return error_response(
        Error::invalid("name", "artifact names are made of A-Z a-z 0-9 . _ - only"));
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  const bool of_sweep = owner == Owner::kSweep;
  // The owner must exist: an unknown id is 404 naming it, not an absent artifact.
  if (of_sweep) {
    if (auto sweep = readable_sweep(store, request, id); !sweep)
      return error_response(sweep.error());
  } else if (auto trial = readable_trial(store, request, id); !trial) {
    return error_response(trial.error());
  }
  auto& artifacts = store->artifacts();
  auto none = [&] {
    return error_response(Error::not_found(std::string(of_sweep ? "sweep " : "trial ") + id +
                                           " has no artifact '" + name + "'"));
  };
  if (of_sweep) {
    auto bytes = store.track(artifacts.get_sweep_artifact(id, name));
    if (!bytes) return error_response(bytes.error());
    if (!*bytes) return none();
    trials::ArtifactLocation at;
    at.size = static_cast<std::int64_t>((*bytes)->size());
    at.bytes = std::move(**bytes);
    return download(request, std::move(at));
  }
  auto at = store.track(artifacts.locate_artifact(id, name));
  if (!at) return error_response(at.error());
  if (!*at) return none();
  return download(request, std::move(**at));
}

Response Api::list_workers(const Request& request) {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto workers = store.track(store->workers().list_workers());
  if (!workers) return error_response(workers.error());
  Json list = Json::array();
  std::map<std::string, bool> seen;
  for (auto& w : *workers) {
    // The pool is everyone's; the trials on it only their projects'.
    if (!request.principal->sees_all_projects())
      std::erase_if(w.trials, [&](const std::string& trial) {
        return !can_read(store, request, sweep_of_trial(trial), &seen);
      });
    list.push_back(to_json(w));
  }
  return json_ok(200, {{"workers", list}, {"total", workers->size()}});
}

Response Api::healthz() {
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  auto r = store.track(store->sweeps().list_sweeps(0, 1));
  if (!r) return error_response(Error::unavailable("store: " + r.error().message));
  Json doc = {{"status", "ok"}};
  // Fewer Redis replicas than acknowledged writes wait for: still serving
  // (200), but saying so, for probes, alerts and the dashboard's banner.
  if (auto h = store.track(store->health()); h && h->replicas_wanted > 0) {
    doc["replication"] = {{"replicas", h->replicas},
                          {"wanted", h->replicas_wanted},
                          {"missing_replicas", h->pauses ? "pause" : "continue"}};
    if (!h->degraded.empty()) {
      doc["status"] = "degraded";
      doc["degraded"] = h->degraded;
    }
  }
  return json_ok(200, doc);
}

Response Api::metrics(const Request& request) {
  // Counts over every project: for those who may see every project.
  if (!request.principal->sees_all_projects())
    return forbidden("/metrics counts every project's trials: it needs a service admin's token");
  auto store = borrow();
  if (!store) return error_response(Error::unavailable("no store"));
  ClusterSnapshot snap;
  constexpr std::int64_t kChunk = 1000;
  for (std::int64_t at = 0;; at += kChunk) {
    auto sweeps = store.track(store->sweeps().list_sweeps(at, kChunk));
    if (!sweeps) return error_response(sweeps.error());
    for (const auto& s : *sweeps) {
      ++snap.sweeps_by_state[trials::to_string(s.state)];
      for (const auto* c : {&s.counts, &s.member_counts}) {
        snap.trials.queued += c->queued;
        snap.trials.running += c->running;
        snap.trials.completed += c->completed;
        snap.trials.failed += c->failed;
        snap.trials.pruned += c->pruned;
        snap.trials.cancelled += c->cancelled;
      }
    }
    if (static_cast<std::int64_t>(sweeps->size()) < kChunk) break;
  }
  auto workers = store.track(store->workers().list_workers());
  if (!workers) return error_response(workers.error());
  for (const auto& w : *workers) {
    ++snap.workers;
    snap.slots += w.slots;
    snap.busy_slots += w.busy_slots;
  }
  if (auto h = store.track(store->health()); h && h->replicas_wanted > 0) {
    snap.replicas_wanted = h->replicas_wanted;
    snap.replicas = h->replicas;
  }
  return Response::text(200, render_cluster(snap) + request_metrics_.render(),
                        "text/plain; version=0.0.4; charset=utf-8");
}

Response Api::event_ticket(const Request& request) {
  // Anyone who may open a stream with a header may have a ticket for one.
  return json_ok(200, {{"ticket", access_->issue_ticket(request.principal, request.token_digest)},
                       {"expires_in_s", AccessControl::kTicketTtl.count() / 1000}});
}

Response Api::events(const Request& request) {
  std::string last = request.header("last-event-id");
  if (last.empty()) last = request.query_or("last_event_id");
  std::string sweep = request.query_or("sweep");
  // Subscribe first, replay second: an event that arrives in between is both
  // queued and replayed, and the subscription drops the queued copy by id.
  // Streams are limited per peer address (the port differs per connection).
  const std::string client = request.remote.substr(0, request.remote.rfind(':'));
  // Only what the caller may read: a sweep of another project is as unknown
  // here as anywhere, and a stream whose token is revoked ends at its next event.
  if (!sweep.empty()) {
    auto store = borrow();
    if (!store) return error_response(Error::unavailable("no store"));
    if (auto s = readable_sweep(store, request, sweep); !s) return error_response(s.error());
  }
  // A user's stream follows their roles as they change (kept at most
  // AccessControl::kTtl), and ends once their token is revoked; an anonymous
  // reader's ends once the service has a second user.
  EventFilter filter;
  if (!access_->open() && !access_->is_bootstrap(request.principal)) {
    const std::string digest = request.token_digest;
    filter = [access = access_, who = request.principal, digest](const HubEvent& e) {
      auto now = who;
      if (!digest.empty()) {
        auto fresh = access->by_digest(digest);
        if (fresh && !*fresh) return Pass::kEnd;  // revoked
        if (fresh) now = *fresh;
      } else if (auto alone = access->one_person(); alone && !*alone) {
        return Pass::kEnd;  // reads need a token now
      }
      if (e.sweep_id.empty() || now->sees_all_projects()) return Pass::kShow;
      return !e.project.empty() && now->can_read(e.project) ? Pass::kShow : Pass::kHide;
    };
  }
  auto sub = hub_.subscribe(sweep, client, filter);
  if (!sub) {
    // A stream ends later than a request: retry after 5 s.
    return error_response(
        Error::unavailable("too many event streams (at most " +
                           std::to_string(hub_.limits().max_per_client) + " per client and " +
                           std::to_string(hub_.limits().max_subscribers) + " in all)"),
        5);
  }
  std::string body = "retry: " + std::to_string(options_.sse_retry_ms) + "\n\n";
  if (!last.empty()) {
    sub->skip_through(last);
    auto store = borrow();
    if (!store) return error_response(Error::unavailable("no store"));
    std::string after = last;
    int replayed = 0;
    std::map<std::string, bool> seen;
    while (replayed < options_.max_replay) {
      auto batch = store.track(store->events().read_events(after, 1000, 0));
      if (!batch) return error_response(batch.error());
      for (const auto& e : *batch) {
        after = e.id;
        if (!sweep.empty() && e.sweep_id != sweep) continue;
        if (!e.sweep_id.empty() && !request.principal->sees_all_projects() &&
            !can_read(store, request, e.sweep_id, &seen))
          continue;
        body += format_sse_frame(to_hub_event(e));
        ++replayed;
      }
      if (batch->size() < 1000) break;
    }
    sub->skip_through(after);
  }
  Response r;
  r.status = 200;
  r.content_type = "text/event-stream";
  r.body = std::move(body);
  r.stream = std::move(sub);
  return r;
}

}  // namespace hpo::web
