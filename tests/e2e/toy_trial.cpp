// A tiny trial program for the end-to-end tests: what a user's training
// script looks like to hpo. It reads --x, --y (and optionally --sleep-ms,
// --fail) from argv, reports two intermediate metrics and a final one on
// stdout, and checks that HPO_PARAMS agrees with argv.
//   value = (x - 1)^2 + (y + 2)^2 + 0.5
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  double x = 0, y = 0;
  int sleep_ms = 0;
  bool fail = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--x=", 0) == 0)
      x = std::strtod(a.c_str() + 4, nullptr);
    else if (a.rfind("--y=", 0) == 0)
      y = std::strtod(a.c_str() + 4, nullptr);
    else if (a.rfind("--sleep-ms=", 0) == 0)
      sleep_ms = std::atoi(a.c_str() + 11);
    else if (a == "--fail")
      fail = true;
  }
  const char* params = std::getenv("HPO_PARAMS");
  const char* trial = std::getenv("HPO_TRIAL_ID");
  if (!params || !trial) {
    std::fprintf(stderr, "HPO_PARAMS or HPO_TRIAL_ID missing\n");
    return 3;
  }
  std::printf("toy trial %s starting with %s\n", trial, params);
  const char* devices = std::getenv("CUDA_VISIBLE_DEVICES");
  std::printf("toy trial %s devices [%s]\n", trial, devices ? devices : "unset");
  double value = (x - 1) * (x - 1) + (y + 2) * (y + 2) + 0.5;
  for (int step = 1; step <= 2; ++step) {
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms / 2));  // simulated work
    std::printf("hpo-metric {\"step\": %d, \"value\": %.17g}\n", step, value + (2 - step));
    std::fflush(stdout);
  }
  if (fail) {
    std::fprintf(stderr, "toy trial failing on purpose\n");
    return 2;
  }
  std::printf("hpo-metric {\"final\": true, \"value\": %.17g}\n", value);
  return 0;
}
