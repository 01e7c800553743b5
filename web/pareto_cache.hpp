// ParetoCache: a sweep's Pareto document (GET /api/sweeps/{id}/pareto),
// computed once per change of its completed trials, not per request.
//
// The front and its hypervolume depend only on the completed trials, which
// never change once completed (a store invariant) and only grow: their
// count is the document's version. The dashboard polls this read; requests
// for a version being computed wait for that one computation instead of
// starting their own, so a front that is slow to measure costs one handler
// thread, not all of them. Up to `max_sweeps` sweeps are kept, least
// recently used dropped. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace hpo::web {

class ParetoCache {
 public:
  explicit ParetoCache(std::size_t max_sweeps = 64) : max_sweeps_(max_sweeps ? max_sweeps : 1) {}

  // The document of `sweep` at `version`, made by `make` when it is not kept.
  nlohmann::json get(const std::string& sweep, std::int64_t version,
                     const std::function<nlohmann::json()>& make);
  // How many times `make` ran (tests).
  std::int64_t computed() const;

 private:
  struct Entry {
    std::int64_t version = -1;
    std::shared_future<nlohmann::json> doc;
    std::list<std::string>::iterator lru;
  };
  mutable std::mutex mu_;
  std::size_t max_sweeps_;
  std::map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // front: most recently used
  std::int64_t computed_ = 0;
};

}  // namespace hpo::web
