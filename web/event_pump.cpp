#include "web/event_pump.hpp"

#include <algorithm>
#include <chrono>

#include "core/backoff.hpp"
#include "web/json_codec.hpp"

namespace hpo::web {

HubEvent to_hub_event(const trials::Event& event) {
  return {event.id, event.type, event.sweep_id, dump(to_json(event))};
}

EventPump::EventPump(StoreFactory factory, EventHub& hub, int block_ms)
    : factory_(std::move(factory)), hub_(hub), block_ms_(block_ms) {}

EventPump::~EventPump() {
  stop();
}

void EventPump::start() {
  if (thread_.joinable()) return;
  stop_.reset();
  thread_ = std::thread([this] { run(); });
}

void EventPump::stop() {
  stop_.set();
  if (thread_.joinable()) thread_.join();
}

void EventPump::run() {
  std::string last_id = "$";
  std::unique_ptr<trials::Store> store;
  Backoff backoff(std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
  while (!stop_.is_set()) {
    if (!store)
      if (auto made = factory_()) store = std::move(*made);
    auto events = store ? store->events().read_events(last_id, 100, block_ms_)
                        : Result<std::vector<trials::Event>>(Error::unavailable("no store"));
    if (!events) {
      store.reset();  // its connection may be broken
      stop_.wait_for(backoff.next());
      continue;
    }
    backoff.reset();
    for (const auto& e : *events) {
      HubEvent out = to_hub_event(e);
      // Who may see it: its sweep's project (a sweep already gone: nobody
      // but those who see every project).
      if (!e.sweep_id.empty())
        if (auto project = projects_.of(store->sweeps(), e.sweep_id)) out.project = *project;
      // A deleted sweep's id may come back in another project.
      if (e.type == "sweep.deleted") projects_.forget(e.sweep_id);
      hub_.publish(out);
      last_id = e.id;
      ++published_;
    }
  }
}

}  // namespace hpo::web
