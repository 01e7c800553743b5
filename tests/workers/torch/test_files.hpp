// Test helpers for the torch trainer's tests: a temp dir, files written into it,
// and a Reporter double that records what the trainer reports.
#pragma once

#include <zlib.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "workers/executor.hpp"

namespace hpo::workers::torch_trainer::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hpo-torch-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes, bool gz = false) const {
    auto p = file(name);
    if (gz) {
      gzFile f = gzopen(p.c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(p, std::ios::binary) << bytes;
    }
    return p;
  }

 private:
  std::filesystem::path path_;
};

// Three Gaussian blobs in 4 features; class = blob. Columns f0..f3 and `label`
// (the label column in the middle, to test that its position does not matter).
inline std::string blobs_csv(int rows, unsigned seed, bool text_labels = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.6);
  std::string out = "f0,f1,label,f2,f3\n";
  const char* names[] = {"cat", "dog", "eel"};
  for (int r = 0; r < rows; ++r) {
    int c = r % 3;
    double f[4];
    for (int k = 0; k < 4; ++k) f[k] = (k == c ? 3.0 : 0.0) + 10.0 * (k == 3) + noise(rng);
    out += std::to_string(f[0]) + "," + std::to_string(f[1]) + "," +
           (text_labels ? names[c] : std::to_string(c)) + "," + std::to_string(f[2]) + "," +
           std::to_string(f[3]) + "\n";
  }
  return out;
}

// y = 3 x0 - 2 x1 + noise, scaled by `scale`.
inline std::string linear_csv(int rows, unsigned seed, double scale = 1.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0, 1);
  std::string out = "x0,x1,y\n";
  for (int r = 0; r < rows; ++r) {
    double a = n(rng), b = n(rng);
    out += std::to_string(a) + "," + std::to_string(b) + "," +
           std::to_string(scale * (3 * a - 2 * b + 0.1 * n(rng))) + "\n";
  }
  return out;
}

// IDX bytes: images (n × h × w, pixel = (i + r) % 256) and labels (i % 10).
inline std::string idx_images(int n, int h, int w) {
  std::string s = {0, 0, 8, 3};
  for (int v : {n, h, w})
    for (int shift : {24, 16, 8, 0}) s += static_cast<char>((v >> shift) & 0xff);
  for (int i = 0; i < n; ++i)
    for (int r = 0; r < h * w; ++r) s += static_cast<char>((i + r) % 256);
  return s;
}
inline std::string idx_labels(int n) {
  std::string s = {0, 0, 8, 1};
  for (int shift : {24, 16, 8, 0}) s += static_cast<char>((n >> shift) & 0xff);
  for (int i = 0; i < n; ++i) s += static_cast<char>(i % 10);
  return s;
}

// A Reporter double: records reports, logs and artifacts; `stop_after_checks`
// / `stop_after_reports` turn stop_reason() to kPruned after that many calls.
class FakeReporter : public Reporter {
 public:
  bool report(std::int64_t step, const trials::Metrics& m) override {
    reports.emplace_back(step, m);
    if (on_report) on_report(step);
    if (stop_after_reports > 0 && static_cast<int>(reports.size()) >= stop_after_reports)
      stopped = stop_with;
    return stopped == StopReason::kNone;
  }
  // `checks` counts the calls until the stop turned (not the ones after it).
  StopReason stop_reason() const override {
    if (stopped != StopReason::kNone) return stopped;
    ++checks;
    if (stop_after_checks > 0 && checks >= stop_after_checks) stopped = stop_with;
    return stopped;
  }
  void log(std::string_view line) override { logs.emplace_back(line); }
  Status put_artifact(const std::string& name, const std::string& bytes) override {
    artifacts.emplace_back(name, bytes);
    return {};
  }
  // What it keeps has no limit (a pool with an artifact folder) unless a test sets one.
  std::int64_t inline_limit = 0;
  std::int64_t inline_artifact_limit() const override { return inline_limit; }
  Status put_artifact_stream(const std::string& name, const ByteProducer& produce) override {
    StringSink bytes(inline_limit > 0 ? inline_limit : std::int64_t{1} << 40, "artifact " + name);
    if (auto st = produce(bytes); !st) return st;
    return put_artifact(name, bytes.bytes());
  }
  // The last one stored under `name` (a checkpoint an earlier attempt left).
  Result<std::optional<std::string>> get_artifact(const std::string& name) override {
    for (auto it = artifacts.rbegin(); it != artifacts.rend(); ++it)
      if (it->first == name) return std::optional<std::string>{it->second};
    return std::optional<std::string>{};
  }
  int count(const std::string& name) const {
    int n = 0;
    for (const auto& a : artifacts) n += a.first == name;
    return n;
  }
  // Whether some log line contains every one of `fragments`.
  bool logged(std::initializer_list<std::string_view> fragments) const {
    for (const auto& l : logs) {
      bool all = true;
      for (auto f : fragments) all = all && l.find(f) != std::string::npos;
      if (all) return true;
    }
    return false;
  }
  const std::string* artifact(const std::string& name) const {
    for (const auto& [n, b] : artifacts)
      if (n == name) return &b;
    return nullptr;
  }

  std::vector<std::pair<std::int64_t, trials::Metrics>> reports;
  std::vector<std::string> logs;
  std::vector<std::pair<std::string, std::string>> artifacts;
  std::function<void(std::int64_t)> on_report;  // called with each report's step
  int stop_after_checks = 0;
  int stop_after_reports = 0;
  StopReason stop_with = StopReason::kPruned;  // the reason those stops give
  mutable int checks = 0;
  mutable StopReason stopped = StopReason::kNone;
};

}  // namespace hpo::workers::torch_trainer::testing
