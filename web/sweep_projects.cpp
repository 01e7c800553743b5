#include "web/sweep_projects.hpp"

#include <utility>

namespace hpo::web {

Result<std::string> SweepProjects::of(trials::SweepStore& store, const std::string& sweep_id) {
  {
    std::lock_guard lock(mu_);
    if (auto it = known_.find(sweep_id); it != known_.end()) return it->second;
  }
  auto project = store.sweep_project(sweep_id);
  if (!project) return project.error();
  std::lock_guard lock(mu_);
  if (known_.size() >= max_entries_) known_.clear();
  known_.emplace(sweep_id, *project);
  return project;
}

void SweepProjects::forget(const std::string& sweep_id) {
  std::lock_guard lock(mu_);
  known_.erase(sweep_id);
}

std::string sweep_of_trial(const std::string& trial_id) {
  auto dash = trial_id.find('-');
  return dash == std::string::npos ? std::string() : trial_id.substr(0, dash);
}

}  // namespace hpo::web
