// The `hpo` commands main.cpp dispatches to, one group per file: each takes
// the parsed command line and returns the process's exit code (common.hpp).
#pragma once

#include <string>
#include <vector>

#include "cli/common.hpp"

namespace hpo::cli {

struct Options {
  std::string server;
  std::string token;
  std::string ca_file;
  bool json = false;
  std::vector<std::string> args;  // the command and its arguments
};

// sweep_commands.cpp: what creates or ends sweeps.
int cmd_submit(Client& client, const Options& o);
int cmd_import(Client& client, const Options& o);
int cmd_cancel(Client& client, const Options& o);
int cmd_delete(Client& client, const Options& o);

// query_commands.cpp: what only reads.
int cmd_status(Client& client, const Options& o);
int cmd_trials(Client& client, const Options& o);
int cmd_pareto(Client& client, const Options& o);
int cmd_workers(Client& client, const Options& o);

// ensemble_commands.cpp: a sweep's ensemble taken out of the pool.
int cmd_export(Client& client, const Options& o);
int cmd_predict(Client& client, const Options& o);

// access_commands.cpp: users, tokens, projects, members, the audit log.
int cmd_whoami(Client& client, const Options& o);
int cmd_project(Client& client, const Options& o);
int cmd_user(Client& client, const Options& o);
int cmd_token(Client& client, const Options& o);
int cmd_worker_token(Client& client, const Options& o);
int cmd_audit(Client& client, const Options& o);
int cmd_annotate(Client& client, const Options& o);

}  // namespace hpo::cli
