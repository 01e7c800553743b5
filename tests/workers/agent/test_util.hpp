// Shared by the agent tests: a recording Reporter, a temp dir, scripts on disk.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "workers/executor.hpp"

namespace hpo::workers::testing {

class RecordingReporter : public Reporter {
 public:
  bool report(std::int64_t step, const trials::Metrics& metrics) override {
    std::lock_guard lk(mu_);
    reports.emplace_back(step, metrics);
    return !should_stop();
  }
  StopReason stop_reason() const override { return stop.load(); }
  void checkpoints_on_stop() override { declared = true; }
  void log(std::string_view line) override {
    std::lock_guard lk(mu_);
    lines.emplace_back(line);
  }
  Status put_artifact(const std::string& name, const std::string& bytes) override {
    std::lock_guard lk(mu_);
    if (refuse_puts) return *refuse_puts;
    artifacts[name] = bytes;
    ++puts[name];
    return {};
  }
  Result<std::optional<std::string>> get_artifact(const std::string& name) override {
    std::lock_guard lk(mu_);
    auto it = artifacts.find(name);
    if (it == artifacts.end()) return std::optional<std::string>{};
    return std::optional<std::string>{it->second};
  }
  std::map<std::string, int> puts;  // how many times each name was stored

  std::vector<std::pair<std::int64_t, trials::Metrics>> reports_copy() {
    std::lock_guard lk(mu_);
    return reports;
  }

  std::atomic<StopReason> stop{StopReason::kNone};
  std::atomic<bool> declared{false};  // the program said hpo-checkpoint-on-stop
  std::optional<Error> refuse_puts;   // set: every put_artifact answers this
  std::vector<std::pair<std::int64_t, trials::Metrics>> reports;
  std::vector<std::string> lines;
  std::map<std::string, std::string> artifacts;

 private:
  std::mutex mu_;
};

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/hpo-worker-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

  // Writes an executable /bin/sh script and returns its path.
  std::string script(const std::string& name, const std::string& body) const {
    std::string p = file(name);
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    ::chmod(p.c_str(), 0755);
    return p;
  }

 private:
  std::string path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace hpo::workers::testing
