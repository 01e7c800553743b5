// EventHub: fan-out of live events to server-sent-events connections.
//
// Why a hub and not one Redis reader per connection: a dashboard may hold many
// open streams, and a blocking XREAD per stream would need a connection and a
// thread each. One EventPump reads the store and calls publish(); the hub
// copies the formatted frame into each Subscription's bounded queue and pokes
// the connection, which drains the queue on its own strand. A consumer that
// falls `max_queue` frames or `max_queue_bytes` bytes behind (whichever comes
// first: frames differ in size) is dropped (its queue closes and the server
// ends the connection); the browser's EventSource reconnects with
// Last-Event-ID and catches up from the store, so dropping loses nothing.
//
// Limits: at most `max_subscribers` open subscriptions in all and
// `max_per_client` per client (the peer address), so that one client cannot
// hold every stream; subscribe() refuses past either (the handler answers 503
// with Retry-After).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace hpo::web {

struct HubEvent {
  std::string id;        // stream id "<ms>-<seq>"; frames carry it as `id:`
  std::string type;      // SSE `event:` name
  std::string sweep_id;  // for per-sweep filters; may be empty
  std::string data;      // one-line JSON for the `data:` line
  std::string project;   // the sweep's project ("" when none or unknown): who may see it
};

// A subscriber's own test of each event: show it, hide it, or end the stream
// (its token was revoked). Called on the publishing thread, outside locks.
enum class Pass { kShow, kHide, kEnd };
using EventFilter = std::function<Pass(const HubEvent&)>;

// "id: ..\nevent: ..\ndata: ..\n\n". Newlines in data become separate data lines.
std::string format_sse_frame(const HubEvent& event);

// Stream ids compare as (ms, seq); "" and unparsable ids sort first.
bool stream_id_less(const std::string& a, const std::string& b);

class Subscription {
 public:
  // `sweep_filter` empty: every event; else only events of that sweep.
  Subscription(std::string sweep_filter, std::size_t max_queue, std::string client = "",
               std::size_t max_queue_bytes = kDefaultMaxQueueBytes, EventFilter filter = {});
  static constexpr std::size_t kDefaultMaxQueueBytes = std::size_t{4} << 20;
  const std::string& client() const { return client_; }

  // Events with ids <= `id` are skipped (they were replayed from the store),
  // including those already queued: the handler subscribes before it replays,
  // so that nothing falls between the replay and the live stream.
  void skip_through(std::string id);
  // Hub side: queue a frame. Returns false when the subscription is closed or
  // has just overflowed (the hub then forgets it).
  bool offer(const HubEvent& event, const std::string& frame);
  // Queues a raw frame (a keep-alive comment) regardless of filters.
  bool offer_raw(std::string frame);

  struct Batch {
    std::string frames;   // concatenated
    bool closed = false;  // overflowed or closed: end the connection after `frames`
  };
  // Connection side: takes everything queued. After an empty, open batch the
  // next offer() calls `notify` again.
  Batch take();
  // Called (from the offering thread) when frames arrive after an empty take().
  void set_notify(std::function<void()> notify);
  void close();
  bool closed() const;

 private:
  struct Queued {
    std::string id;  // "" for raw frames
    std::string frame;
  };
  bool push_locked(Queued item, std::function<void()>& to_call);

  mutable std::mutex mu_;
  std::string client_;  // the peer address (limits per client)
  std::string sweep_filter_;
  EventFilter filter_;  // set once, at construction
  std::size_t max_queue_;
  std::size_t max_queue_bytes_;
  std::string skip_through_;
  std::deque<Queued> queue_;
  std::size_t queued_bytes_ = 0;
  bool closed_ = false;
  bool notified_ = false;  // a notify is outstanding; no need to call again
  std::function<void()> notify_;
};

struct HubLimits {
  std::size_t max_queue = 1024;        // frames a subscriber may fall behind
  std::size_t max_subscribers = 2048;  // open streams in all
  std::size_t max_per_client = 64;     // open streams of one peer address
  std::size_t max_queue_bytes = Subscription::kDefaultMaxQueueBytes;  // bytes it may fall behind
};

class EventHub {
 public:
  explicit EventHub(std::size_t max_queue = 1024) : limits_{max_queue} {}
  explicit EventHub(HubLimits limits) : limits_(limits) {}

  // nullptr when the hub already holds max_subscribers streams, or
  // max_per_client streams of `client` (a peer address; "" is one client too).
  // `filter` (optional): the subscriber's own test of each event (who may see it).
  std::shared_ptr<Subscription> subscribe(std::string sweep_filter = "", std::string client = "",
                                          EventFilter filter = {});
  const HubLimits& limits() const { return limits_; }
  void publish(const HubEvent& event);
  // Closes every subscription (server shutdown).
  void close_all();
  std::size_t subscriber_count();

 private:
  void prune_locked();

  std::mutex mu_;
  HubLimits limits_;
  std::vector<std::weak_ptr<Subscription>> subs_;
};

}  // namespace hpo::web
