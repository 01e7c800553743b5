// Load on the real service (issue 11): 1,000 concurrent clients against the
// real hpo-scheduler (embedded Redis, default settings) with a real hpo-worker
// running the submitted sweeps, on loopback, for 60 s:
//   - readers: keep-alive connections in a closed loop over the read endpoints
//     (sweep list, one sweep, a trial page, one trial, /healthz);
//   - event streams: /api/events subscribers reading every event;
//   - submitters: POST /api/sweeps (a small synthetic sweep), one a second
//     each, as users submitting; their sweeps run on the worker.
// A probe asks /healthz twice a second on its own connection. Prints latency
// percentiles, throughput, error rate (any answer but the expected status, or
// a transport error), stream drops, and the scheduler's resident memory and
// open descriptors sampled each second. Asserts nothing: a benchmark.
//   web_load_bench [seconds=60] [readers=900] [streams=50] [submitters=50]
#include <dirent.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"

using namespace hpo;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

namespace {

const std::string kBin = HPO_BINARY_DIR;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Latencies (µs) and outcomes of one kind of request, merged at the end.
struct Stats {
  std::mutex mu;
  std::vector<double> us;
  std::int64_t errors = 0;
  void add(const std::vector<double>& v, std::int64_t e) {
    std::lock_guard lk(mu);
    us.insert(us.end(), v.begin(), v.end());
    errors += e;
  }
  double pct(double p) {
    if (us.empty()) return 0;
    std::sort(us.begin(), us.end());
    return us[std::min(us.size() - 1, static_cast<std::size_t>(p * us.size()))] / 1000.0;
  }
};

std::int64_t rss_kb(int pid) {
  std::istringstream in(read_file("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  return 0;
}

int open_fds(int pid) {
  int n = 0;
  if (DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (::readdir(d)) ++n;
    ::closedir(d);
  }
  return std::max(0, n - 2);
}

std::string sweep_json(int i, int trials) {
  return Json{{"name", "load-" + std::to_string(i)},
              {"objective", {{"metric", "value"}, {"mode", "min"}}},
              {"parameters",
               {{"x1", {{"type", "float"}, {"min", -5}, {"max", 10}}},
                {"x2", {{"type", "float"}, {"min", 0}, {"max", 15}}}}},
              {"search", {{"algorithm", "random"}, {"max_trials", trials}, {"max_concurrent", 2}}},
              {"trial", {{"kind", "synthetic"}, {"function", "branin"}}}}
      .dump();
}

}  // namespace

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 60;
  const int readers = argc > 2 ? std::atoi(argv[2]) : 900;
  const int streams = argc > 3 ? std::atoi(argv[3]) : 50;
  const int submitters = argc > 4 ? std::atoi(argv[4]) : 50;

  char tmpl[] = "/tmp/hpo-load-XXXXXX";
  const std::string home = ::mkdtemp(tmpl);
  const std::vector<std::pair<std::string, std::string>> env = {{"HPO_HOME", home},
                                                                {"HPO_LOG_LEVEL", "warn"}};
  testing::Process scheduler({kBin + "/scheduler/hpo-scheduler", "--listen", "127.0.0.1:0"}, env,
                             home + "/scheduler.log");
  if (!testing::wait_for([&] { return std::filesystem::exists(home + "/scheduler.json"); },
                         std::chrono::seconds(30))) {
    std::fprintf(stderr, "scheduler did not start:\n%s\n",
                 read_file(home + "/scheduler.log").c_str());
    return 1;
  }
  testing::Process worker({kBin + "/workers/hpo-worker", "--name", "load", "--slots", "2"}, env,
                          home + "/worker.log");
  const Json state = Json::parse(read_file(home + "/scheduler.json"));
  auto url = parse_http_url(state["api"].get<std::string>());
  const std::string token = state["token"].get<std::string>();
  const std::string host = url->host;
  const int port = url->port;

  // One sweep whose trials the readers ask about.
  HttpClient admin(*url);
  admin.set_token(token);
  auto created = admin.post("/api/sweeps", sweep_json(0, 20));
  if (!created.ok() || created->status != 201) return 1;
  const std::string sweep = Json::parse(created->body)["id"].get<std::string>();
  std::string trial;
  testing::wait_for(
      [&] {
        auto page = admin.get("/api/sweeps/" + sweep + "/trials?limit=1");
        if (!page.ok() || page->status != 200) return false;
        auto j = Json::parse(page->body);
        if (!j["trials"].empty()) trial = j["trials"][0]["id"].get<std::string>();
        return !trial.empty();
      },
      std::chrono::seconds(30));
  if (trial.empty()) return 1;
  const std::vector<std::string> targets = {"/api/sweeps?limit=20", "/api/sweeps/" + sweep,
                                            "/api/sweeps/" + sweep + "/trials?limit=50",
                                            "/api/trials/" + trial, "/healthz"};

  std::atomic<bool> stop{false};
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  Stats reads, submits, health;
  std::atomic<std::int64_t> events{0}, drops{0}, stream_errors{0};
  std::atomic<int> streams_open{0};
  const std::int64_t rss_start = rss_kb(scheduler.pid());
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(readers + streams + submitters + 2));

  for (int i = 0; i < readers; ++i)
    threads.emplace_back([&, i] {
      HttpClient c(host, port, std::chrono::seconds(30));
      std::vector<double> us;
      std::int64_t errors = 0;
      for (std::size_t k = static_cast<std::size_t>(i); !stop; ++k) {
        auto t0 = Clock::now();
        auto r = c.get(targets[k % targets.size()]);
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        if (!r.ok() || r->status != 200) ++errors;
      }
      reads.add(us, errors);
    });
  for (int i = 0; i < streams; ++i)
    threads.emplace_back([&] {
      while (!stop) {
        SseClient s(host, port);
        auto opened = s.open("/api/events");
        if (!opened.ok() || opened->status != 200) {
          ++stream_errors;
          std::unique_lock lk(stop_mu);
          stop_cv.wait_for(lk, std::chrono::seconds(1), [&] { return stop.load(); });
          continue;
        }
        ++streams_open;
        while (!stop) {
          auto ev = s.next(std::chrono::milliseconds(500));
          if (!ev.ok()) {
            ++drops;
            break;
          }
          if (*ev) ++events;
        }
        --streams_open;
      }
    });
  for (int i = 0; i < submitters; ++i)
    threads.emplace_back([&, i] {
      HttpClient c(host, port, std::chrono::seconds(30));
      c.set_token(token);
      std::vector<double> us;
      std::int64_t errors = 0;
      for (int k = 0; !stop; ++k) {
        auto t0 = Clock::now();
        auto r = c.post("/api/sweeps", sweep_json(i * 100000 + k, 2));
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        if (!r.ok() || r->status != 201) ++errors;
        std::unique_lock lk(stop_mu);  // a user's pace: one submit a second
        stop_cv.wait_for(lk, std::chrono::seconds(1), [&] { return stop.load(); });
      }
      submits.add(us, errors);
    });
  threads.emplace_back([&] {  // the health probe
    HttpClient c(host, port, std::chrono::seconds(10));
    std::vector<double> us;
    std::int64_t errors = 0;
    while (!stop) {
      auto t0 = Clock::now();
      auto r = c.get("/healthz");
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      if (!r.ok() || r->status != 200) ++errors;
      std::unique_lock lk(stop_mu);
      stop_cv.wait_for(lk, std::chrono::milliseconds(500), [&] { return stop.load(); });
    }
    health.add(us, errors);
  });

  std::int64_t rss_max = rss_start;
  int fds_max = 0;
  const auto t_start = Clock::now();
  for (int s = 0; s < seconds; ++s) {
    testing::let_time_pass(std::chrono::seconds(1));  // the load's length: sampled each second
    rss_max = std::max(rss_max, rss_kb(scheduler.pid()));
    fds_max = std::max(fds_max, open_fds(scheduler.pid()));
  }
  const std::int64_t rss_end = rss_kb(scheduler.pid());
  const int streams_at_end = streams_open.load();
  stop = true;
  stop_cv.notify_all();
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t_start).count();
  const bool alive = scheduler.wait(std::chrono::milliseconds(0)) == -1;  // still running

  auto line = [&](const char* what, Stats& st) {
    const double n = static_cast<double>(st.us.size());
    std::printf(
        "  %-8s %9.0f requests %8.1f req/s  p50 %7.2f ms  p99 %8.2f ms  max %8.1f ms  "
        "errors %lld (%.3f%%)\n",
        what, n, n / elapsed, st.pct(0.50), st.pct(0.99), st.pct(1.0),
        static_cast<long long>(st.errors), n > 0 ? 100.0 * st.errors / n : 0.0);
  };
  std::printf(
      "web load: %.0f s, %d readers + %d event streams + %d submitters (%d clients) on "
      "loopback; hpo-scheduler with its defaults, one hpo-worker (2 slots)\n",
      elapsed, readers, streams, submitters, readers + streams + submitters);
  line("reads", reads);
  line("submits", submits);
  line("healthz", health);
  std::printf(
      "  streams  %d of %d open at the end, %lld events received, %lld dropped, %lld "
      "refused\n",
      streams_at_end, streams, static_cast<long long>(events.load()),
      static_cast<long long>(drops.load()), static_cast<long long>(stream_errors.load()));
  std::printf(
      "  scheduler %s; resident memory %.0f MB at start, %.0f MB max, %.0f MB at the end; "
      "open descriptors max %d\n",
      alive ? "alive" : "DEAD", rss_start / 1024.0, rss_max / 1024.0, rss_end / 1024.0, fds_max);
  const double total = static_cast<double>(reads.us.size() + submits.us.size());
  const double errs = static_cast<double>(reads.errors + submits.errors);
  std::printf("  error rate %.4f%% (reads and submits)\n", total > 0 ? 100.0 * errs / total : 0.0);
  worker.kill(SIGTERM);
  worker.wait(std::chrono::seconds(40));
  scheduler.kill(SIGTERM);  // it stops its Redis too
  scheduler.wait(std::chrono::seconds(20));
  std::filesystem::remove_all(home);
  return alive ? 0 : 1;
}
