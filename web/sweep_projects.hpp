// SweepProjects: which project each sweep is in, remembered (a sweep never
// changes project) until it is deleted, for the event pump's one thread: who
// may see each event. One store read the first time a sweep is asked about;
// bounded (forgets everything past `max_entries`).
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/result.hpp"
#include "trials/store.hpp"

namespace hpo::web {

class SweepProjects {
 public:
  explicit SweepProjects(std::size_t max_entries = 100000) : max_entries_(max_entries) {}
  // The sweep's project; kNotFound for no such sweep (nothing remembered then).
  Result<std::string> of(trials::SweepStore& store, const std::string& sweep_id);
  // A sweep that was deleted (its id may come back in another project).
  void forget(const std::string& sweep_id);

 private:
  std::mutex mu_;
  std::size_t max_entries_;
  std::unordered_map<std::string, std::string> known_;
};

// The sweep a trial id names ("<sweep>-<n>" or "<sweep>-m<n>"): what comes
// before its first '-' ("" when there is none).
std::string sweep_of_trial(const std::string& trial_id);

}  // namespace hpo::web
