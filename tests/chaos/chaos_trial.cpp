// The chaos suite's trial program: a user's training script that keeps a
// ledger of its real runs. Each run appends one line when it starts and one
// when it ends (O_APPEND, one write() per line, so concurrent runs never
// interleave), which lets the oracle count real executions independently of
// what Redis says.
//
//   chaos_trial --x=F --ledger=PATH [--steps=N] [--step-ms=M] [--fail-on=FILE]
//
// value = (x - 1)^2 + 0.5. Each step reports value + (steps - step); with
// --fail-on, the run exits 1 (a retryable failure) at the first step after
// FILE appears.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

void append(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  std::string l = line + "\n";
  (void)!::write(fd, l.data(), l.size());
  ::close(fd);
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

int main(int argc, char** argv) {
  double x = 0;
  int steps = 5, step_ms = 100;
  std::string ledger, fail_on;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--x=", 0) == 0) x = std::strtod(a.c_str() + 4, nullptr);
    else if (a.rfind("--ledger=", 0) == 0) ledger = a.substr(9);
    else if (a.rfind("--steps=", 0) == 0) steps = std::atoi(a.c_str() + 8);
    else if (a.rfind("--step-ms=", 0) == 0) step_ms = std::atoi(a.c_str() + 10);
    else if (a.rfind("--fail-on=", 0) == 0) fail_on = a.substr(10);
  }
  const std::string id = env("HPO_TRIAL_ID") + " " + env("HPO_ATTEMPT");
  append(ledger, "start " + id + " " + std::to_string(::getpid()));
  std::printf("chaos trial %s attempt %s\n", env("HPO_TRIAL_ID").c_str(), env("HPO_ATTEMPT").c_str());
  const double value = (x - 1) * (x - 1) + 0.5;
  for (int step = 1; step <= steps; ++step) {
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));  // the simulated work
    std::printf("hpo-metric {\"step\": %d, \"value\": %.17g}\n", step, value + (steps - step));
    std::fflush(stdout);
    if (!fail_on.empty() && ::access(fail_on.c_str(), F_OK) == 0) {
      append(ledger, "fail " + id);
      std::fprintf(stderr, "chaos trial failing on purpose\n");
      return 1;
    }
  }
  char v[64];
  std::snprintf(v, sizeof v, "%.17g", value);
  append(ledger, "end " + id + " " + v);
  std::printf("hpo-metric {\"final\": true, \"value\": %s}\n", v);
  return 0;
}
