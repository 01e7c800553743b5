// WorkRoot: the folder under which a worker makes its attempt directories
// ("<trial>-a<attempt>", removed when the attempt ends).
//
// While the worker runs it holds an flock on "<root>/.hpo-worker.lock": a
// second worker of the same name on this host is refused. At claim() it
// removes what a previous run under its name left, and the attempt
// directories of dead workers beside it (siblings whose lock file nobody
// holds). Only attempt directories are ever removed: a --work-dir may be
// shared with anything else.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"
#include "trials/trial.hpp"

namespace hpo::workers::agent {

class WorkRoot {
 public:
  // An empty `root`: no attempt directories are made.
  WorkRoot(std::string root, std::string worker);
  ~WorkRoot();  // unlock()
  WorkRoot(const WorkRoot&) = delete;
  WorkRoot& operator=(const WorkRoot&) = delete;

  // kConflict when another live worker holds the root.
  Status claim();
  void unlock();

  // A fresh, empty directory for the attempt ("" when there is no root or it
  // cannot be made; the reason is logged).
  std::string make_attempt_dir(const trials::Trial& trial) const;
  // Removes an attempt directory make_attempt_dir() returned ("" is none).
  static void remove(const std::string& dir);

 private:
  std::string root_;
  std::string worker_;
  int lock_fd_ = -1;
};

}  // namespace hpo::workers::agent
