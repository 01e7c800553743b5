// REST trial pages of a sweep with 10,000 finished trials (issue 6: "a page of
// trials over REST in under 100 ms at the server").
//
// Starts a real redis-server and the real HttpServer + Api, fills one sweep
// with 10,000 completed trials through the store, then times each request
// shape over loopback HTTP, side by side with its reference: the bare store
// call(s) the handler makes (RedisStore on the same server). Prints a table;
// asserts nothing. Finished trials are cached by the Api (web/trial_cache.hpp),
// so "cold" is the first request. Run: build-*/tests/web/web_trials_bench [trials] [repeats]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "tests/support/http_client.hpp"
#include "tests/support/redis_server.hpp"
#include "trials/redis/redis_store.hpp"
#include "web/api.hpp"
#include "web/http_server.hpp"

using namespace hpo;
using Clock = std::chrono::steady_clock;

namespace {
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
std::unique_ptr<trials::redis::RedisStore> open_store(const std::string& url) {
  auto s = trials::redis::RedisStore::open(url);
  if (!s) throw std::runtime_error(s.error().message);
  return std::move(*s);
}
}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 20;
  testing::RedisServer redis;
  auto store = open_store(redis.url());
  auto id =
      store->create_sweep({"bench", R"({"objective":{"metric":"value","mode":"min"}})", false});
  if (!id) return 1;
  auto t_fill = Clock::now();
  for (int i = 0; i < n; ++i) {
    trials::NewTrial t;
    t.sweep_id = *id;
    t.number = i;
    t.limit = n;
    t.params = {{"x1", i * 0.001}, {"x2", std::int64_t{i % 7}}};
    if (!store->create_trial(t)) return 1;
    auto c = store->claim("w", 1, 60000);
    if (!c || !*c) return 1;
    trials::TrialResult r;
    r.value = (i * 7919) % 10007 / 100.0;
    r.metrics = {{"value", *r.value}, {"loss", *r.value / 2}};
    if (!store->complete((*c)->trial.id, (*c)->trial.attempt, "w", r)) return 1;
  }
  std::printf("filled %d completed trials in %.1f s\n", n, ms_since(t_fill) / 1000);

  web::EventHub hub;
  std::string url = redis.url();
  web::StoreFactory factory = [url]() -> hpo::Result<std::unique_ptr<trials::Store>> {
    return std::unique_ptr<trials::Store>(open_store(url));
  };
  web::Api api({}, factory, hub);
  web::ServerOptions so;
  so.port = 0;
  web::HttpServer server(so, api.handler());
  if (!server.start()) return 1;
  HttpClient client("127.0.0.1", server.port(), std::chrono::seconds(60));

  struct Case {
    const char* name;
    std::string target;
    std::function<void()> reference;  // the store calls the handler makes
  };
  const std::string base = "/api/sweeps/" + *id;
  auto load_all = [&] {
    for (std::int64_t at = 0; at < n; at += 1000)
      (void)store->list_trials(*id, hpo::trials::TrialRole::kTrial, at, 1000);
  };
  std::vector<Case> cases = {
      {"page 100 by number", base + "/trials?limit=100&offset=5000",
       [&] { (void)store->list_trials(*id, hpo::trials::TrialRole::kTrial, 5000, 100); }},
      {"page 100 sorted by value", base + "/trials?limit=100&sort=value", load_all},
      {"page 100 completed, -metric", base + "/trials?limit=100&state=completed&sort=-metric:loss",
       load_all},
      {"sweep document", base, [&] { (void)store->get_sweep(*id); }},
      {"CSV export (all)", base + "/trials?format=csv", load_all},
  };
  std::printf("\n%-30s %10s %12s %14s %8s\n", "request", "cold ms", "REST ms", "store-only ms",
              "ratio");
  for (auto& c : cases) {
    std::vector<double> rest, ref;
    auto t_cold = Clock::now();
    if (auto r = client.get(c.target); !r || r->status != 200) return 1;
    double cold = ms_since(t_cold);
    for (int i = 0; i < repeats; ++i) {
      auto t0 = Clock::now();
      auto r = client.get(c.target);
      rest.push_back(ms_since(t0));
      if (!r || r->status != 200) {
        std::printf("%s failed\n", c.name);
        return 1;
      }
      t0 = Clock::now();
      c.reference();
      ref.push_back(ms_since(t0));
    }
    double a = median(rest), b = median(ref);
    std::printf("%-30s %10.2f %12.2f %14.2f %8.2f\n", c.name, cold, a, b, a / b);
  }
  std::printf(
      "\n(cold = first request; REST = median of %d loopback round trips through HttpServer +\n"
      " Api + RedisStore; store-only = the bare RedisStore calls an uncached handler makes:\n"
      " one page, or all %d trials for sorted/filtered/CSV; target: < 100 ms)\n",
      repeats, n);
  server.stop();
  return 0;
}
