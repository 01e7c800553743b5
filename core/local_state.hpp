// The local state file: how `hpo-worker` and `hpo` find a scheduler that runs
// on the same machine without any flags.
//
// `hpo-scheduler` writes $HPO_HOME/scheduler.json (HPO_HOME defaults to
// $HOME/.hpo) once it serves: {"redis": URL, "api": URL, "token": T, "pid": N}
// (and "ca_file" when the API speaks HTTPS).
// The file is written to a temporary name and renamed (readers never see half
// a file) with mode 0600, since it holds the API token. It is removed on a
// clean exit; a stale file from a killed scheduler is simply overwritten.
#pragma once

#include <string>

#include "core/result.hpp"

namespace hpo {

struct LocalState {
  std::string redis;  // redis://127.0.0.1:PORT
  std::string api;    // http://127.0.0.1:8080
  std::string token;  // bearer token for mutating API calls
  long pid = 0;
  std::string ca_file;  // an https:// API: the certificate a local client trusts
};

// $HPO_HOME, else $HOME/.hpo, else ./.hpo
std::string hpo_home();
std::string local_state_path();

Result<LocalState> read_local_state();
Status write_local_state(const LocalState& state);
void remove_local_state();

}  // namespace hpo
