// EventPump: the one reader of the store's event stream for the whole server.
//
// A background thread blocks on store.read_events(last_id, 100, block_ms) and
// publishes every event to the EventHub, so that SSE connections never touch
// Redis. It starts at "$" (only new events: SSE clients that need the past ask
// with Last-Event-ID and the handler replays it from the store). A store error
// backs off (up to 2 s) and retries with a fresh store. stop() returns within
// about block_ms plus the store's command timeout.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/stop_flag.hpp"
#include "trials/store.hpp"
#include "web/event_hub.hpp"
#include "web/sweep_projects.hpp"

namespace hpo::web {

using trials::StoreFactory;

// The hub form of a store event: data is the event's JSON document.
HubEvent to_hub_event(const trials::Event& event);

class EventPump {
 public:
  EventPump(StoreFactory factory, EventHub& hub, int block_ms = 1000);
  ~EventPump();
  EventPump(const EventPump&) = delete;
  EventPump& operator=(const EventPump&) = delete;

  void start();
  void stop();
  // Events published so far (tests, metrics).
  std::uint64_t published() const { return published_.load(); }

 private:
  void run();

  StoreFactory factory_;
  EventHub& hub_;
  int block_ms_;
  StopFlag stop_;
  std::atomic<std::uint64_t> published_{0};
  SweepProjects projects_;  // the pump thread's own
  std::thread thread_;
};

}  // namespace hpo::web
