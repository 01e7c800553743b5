// What the worker tells a running command trial (HPO_CONTROL_DIR): a folder
// of the worker's inside the attempt's, made after the attempt's folder is
// handed to the trial user and written only through a descriptor opened
// then (never a path, never a link): a trial can read it and write nothing
// in it; renaming or removing it (the attempt's folder is the trial's)
// changes only what the trial itself reads. Its files, each replaced whole:
//   stop_reason  why the worker stops the program, written just before the
//                signal: one word ("prune", "cancel", "timeout", "drain",
//                "preempt", "lost_lease" or "error") and a newline;
//   checkpoint   "<n> stored" or "<n> failed" once the program's n-th
//                `hpo-checkpoint` is dealt with (a library waits for it
//                before it touches the checkpoint folder again).
#pragma once

#include <string>

#include "workers/executor.hpp"

namespace hpo::workers {

std::string control_dir(const std::string& work_dir);

// The word stop_reason holds for a stop.
const char* stop_word(StopReason reason);

// control_dir() for one attempt: made and opened at construction (none
// without a work directory), closed at destruction.
class ControlDir {
 public:
  explicit ControlDir(const std::string& work_dir);
  ~ControlDir();
  ControlDir(const ControlDir&) = delete;
  ControlDir& operator=(const ControlDir&) = delete;

  // Whether the folder was made and is the worker's alone.
  bool open() const { return fd_ >= 0; }
  // Replaces the file `name` with `text` (0644). Best effort: what follows
  // (the signal) happens anyway.
  void write(const char* name, const std::string& text) const;

 private:
  int fd_ = -1;
};

}  // namespace hpo::workers
