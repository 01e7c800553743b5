// SpecCache: each sweep's spec parsed once per process, then shared.
//
// A sweep's spec never changes after submit, so the typed SweepSpec can be
// parsed once and handed to everyone in the process who needs it (the REST
// handlers, the sweep's controller, the schedulability watch; on a worker,
// every trial of the sweep) as an immutable shared_ptr. The REST handler that
// accepted the spec puts its parse in, so a sweep submitted to this scheduler
// is never parsed again here.
//
// Bounded: the least recently used sweeps fall out past `capacity` (an ended
// sweep is rarely asked for again; if it is, it is parsed again). A text that
// does not parse is not cached. Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/result.hpp"
#include "trials/spec/spec.hpp"

namespace hpo::trials {

class SpecCache {
 public:
  explicit SpecCache(std::size_t capacity = 1024);

  // The spec of `sweep_id`, whose stored text is `spec_json`: parsed on the
  // first call (kInvalidArgument with parse_spec's errors), shared after.
  Result<std::shared_ptr<const SweepSpec>> get(const std::string& sweep_id,
                                               const std::string& spec_json);
  // The cached spec of `sweep_id`, or null (nothing is parsed).
  std::shared_ptr<const SweepSpec> find(const std::string& sweep_id);
  // Puts a spec parsed elsewhere (the submit handler's).
  void put(const std::string& sweep_id, std::shared_ptr<const SweepSpec> spec);
  // How many times get() parsed a text (tests).
  std::int64_t parses() const;

 private:
  using Lru = std::list<std::pair<std::string, std::shared_ptr<const SweepSpec>>>;
  void insert_locked(const std::string& sweep_id, std::shared_ptr<const SweepSpec> spec);

  mutable std::mutex mu_;
  std::size_t capacity_;
  Lru lru_;  // most recent first
  std::map<std::string, Lru::iterator> index_;
  std::int64_t parses_ = 0;
};

}  // namespace hpo::trials
