#include "web/event_hub.hpp"

#include <charconv>

namespace hpo::web {

namespace {
std::pair<std::uint64_t, std::uint64_t> parse_stream_id(const std::string& id) {
  std::uint64_t ms = 0, seq = 0;
  auto dash = id.find('-');
  const char* b = id.data();
  auto r1 = std::from_chars(b, b + (dash == std::string::npos ? id.size() : dash), ms);
  if (r1.ec != std::errc{}) return {0, 0};
  if (dash != std::string::npos) std::from_chars(b + dash + 1, b + id.size(), seq);
  return {ms, seq};
}
}  // namespace

std::string format_sse_frame(const HubEvent& event) {
  std::string out;
  out.reserve(event.data.size() + event.id.size() + event.type.size() + 32);
  if (!event.id.empty()) out += "id: " + event.id + "\n";
  if (!event.type.empty()) out += "event: " + event.type + "\n";
  std::size_t start = 0;
  do {
    auto nl = event.data.find('\n', start);
    out += "data: ";
    out.append(event.data, start, nl == std::string::npos ? std::string::npos : nl - start);
    out += "\n";
    start = nl == std::string::npos ? std::string::npos : nl + 1;
  } while (start != std::string::npos);
  out += "\n";
  return out;
}

bool stream_id_less(const std::string& a, const std::string& b) {
  return parse_stream_id(a) < parse_stream_id(b);
}

Subscription::Subscription(std::string sweep_filter, std::size_t max_queue, std::string client,
                           std::size_t max_queue_bytes, EventFilter filter)
    : client_(std::move(client)),
      sweep_filter_(std::move(sweep_filter)),
      filter_(std::move(filter)),
      max_queue_(max_queue),
      max_queue_bytes_(max_queue_bytes) {}

void Subscription::skip_through(std::string id) {
  std::lock_guard lock(mu_);
  skip_through_ = std::move(id);
}

bool Subscription::push_locked(Queued item, std::function<void()>& to_call) {
  if (closed_) return false;
  if (queue_.size() >= max_queue_ || queued_bytes_ + item.frame.size() > max_queue_bytes_) {
    // Slow consumer: drop it; it reconnects with Last-Event-ID and replays.
    closed_ = true;
    queue_.clear();
    queued_bytes_ = 0;
  } else {
    queued_bytes_ += item.frame.size();
    queue_.push_back(std::move(item));
  }
  if (!notified_ && notify_) {
    notified_ = true;
    to_call = notify_;
  }
  return !closed_;
}

bool Subscription::offer(const HubEvent& event, const std::string& frame) {
  std::function<void()> to_call;
  bool open;
  if (filter_ && !closed()) {
    switch (filter_(event)) {
      case Pass::kShow:
        break;
      case Pass::kHide:
        return true;
      case Pass::kEnd:
        close();
        return false;
    }
  }
  {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    if (!sweep_filter_.empty() && event.sweep_id != sweep_filter_) return true;
    if (!skip_through_.empty() && !stream_id_less(skip_through_, event.id)) return true;
    open = push_locked({event.id, frame}, to_call);
  }
  if (to_call) to_call();
  return open;
}

bool Subscription::offer_raw(std::string frame) {
  std::function<void()> to_call;
  bool open;
  {
    std::lock_guard lock(mu_);
    open = push_locked({"", std::move(frame)}, to_call);
  }
  if (to_call) to_call();
  return open;
}

Subscription::Batch Subscription::take() {
  std::lock_guard lock(mu_);
  Batch b;
  for (auto& q : queue_)
    if (q.id.empty() || skip_through_.empty() || stream_id_less(skip_through_, q.id))
      b.frames += q.frame;
  queue_.clear();
  queued_bytes_ = 0;
  b.closed = closed_;
  notified_ = false;
  return b;
}

void Subscription::set_notify(std::function<void()> notify) {
  bool call_now;
  {
    std::lock_guard lock(mu_);
    notify_ = std::move(notify);
    call_now = !queue_.empty() || closed_;
    notified_ = call_now;
  }
  if (call_now) notify_();
}

void Subscription::close() {
  std::function<void()> to_call;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    if (!notified_ && notify_) {
      notified_ = true;
      to_call = notify_;
    }
  }
  if (to_call) to_call();
}

bool Subscription::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

std::shared_ptr<Subscription> EventHub::subscribe(std::string sweep_filter, std::string client,
                                                  EventFilter filter) {
  std::lock_guard lock(mu_);
  prune_locked();
  if (subs_.size() >= limits_.max_subscribers) return nullptr;
  std::size_t mine = 0;
  for (const auto& w : subs_)
    if (auto s = w.lock(); s && s->client() == client) ++mine;
  if (mine >= limits_.max_per_client) return nullptr;
  auto sub =
      std::make_shared<Subscription>(std::move(sweep_filter), limits_.max_queue, std::move(client),
                                     limits_.max_queue_bytes, std::move(filter));
  subs_.push_back(sub);
  return sub;
}

void EventHub::publish(const HubEvent& event) {
  std::string frame = format_sse_frame(event);
  std::vector<std::shared_ptr<Subscription>> live;
  {
    std::lock_guard lock(mu_);
    live.reserve(subs_.size());
    std::erase_if(subs_, [&](const std::weak_ptr<Subscription>& w) {
      auto s = w.lock();
      if (!s) return true;
      live.push_back(std::move(s));
      return false;
    });
  }
  // Offer outside the hub lock: a notify posts to a connection's strand.
  std::vector<Subscription*> dead;
  for (auto& s : live)
    if (!s->offer(event, frame)) dead.push_back(s.get());
  if (dead.empty()) return;
  std::lock_guard lock(mu_);
  std::erase_if(subs_, [&](const std::weak_ptr<Subscription>& w) {
    auto s = w.lock();
    return !s || s->closed();
  });
}

void EventHub::close_all() {
  std::vector<std::shared_ptr<Subscription>> live;
  {
    std::lock_guard lock(mu_);
    for (auto& w : subs_)
      if (auto s = w.lock()) live.push_back(std::move(s));
    subs_.clear();
  }
  for (auto& s : live) s->close();
}

void EventHub::prune_locked() {
  std::erase_if(subs_, [](const std::weak_ptr<Subscription>& w) {
    auto s = w.lock();
    return !s || s->closed();
  });
}

std::size_t EventHub::subscriber_count() {
  std::lock_guard lock(mu_);
  prune_locked();
  return subs_.size();
}

}  // namespace hpo::web
