// Fuzz target: the HTTP request path. The input is the raw bytes of one or more
// pipelined requests; each is parsed with Boost.Beast under the server's own
// limits, turned into a Request as the server does, and answered by the real
// router and REST handlers over the real RedisStore (tests/support/
// test_store.hpp: one redis-server for the process, started on the first
// input). Each input gets a key prefix of its own holding one seeded sweep
// with a running trial, and every connection the Api opens is on that prefix.
// "@S" and "@T" in the input stand for that sweep's and trial's ids, so the
// fuzzer reaches the handlers of existing records too. Every 1000 inputs the
// database is flushed (the Functions library survives FLUSHDB, and each
// connection loads it when missing), so Redis stays small over a long run.
//
// Checked besides memory safety: every answer has a status in [200, 600) and,
// for JSON answers, a body that parses; an error answer (>= 400) is the
// {"error": {...}} shape.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/test_store.hpp"
#include "trials/redis/redis_store.hpp"
#include "trials/spec/spec.hpp"
#include "web/api.hpp"
#include "web/event_hub.hpp"
#include "web/http_server.hpp"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using namespace hpo;

constexpr char kSpec[] = R"({"name":"fz","objective":{"metric":"value","mode":"min"},
  "parameters":{"x":{"type":"float","min":0,"max":1}},
  "search":{"algorithm":"random","max_trials":4,"max_concurrent":2,"seed":1},
  "trial":{"kind":"synthetic","function":"branin"}})";

struct Seeded {
  std::string prefix;
  std::unique_ptr<trials::redis::RedisStore> store;
  std::string sweep, trial;
};

Seeded seed_store() {
  static std::uint64_t inputs = 0;
  Seeded s;
  s.prefix = hpo::testing::fresh_store_prefix();
  s.store = hpo::testing::open_test_store(s.prefix);
  // The previous inputs' connections are closed by now: nothing reads their keys.
  if (++inputs % 1000 == 0) (void)s.store->client().command({"FLUSHDB"});
  trials::NewSweep ns;
  ns.name = "fz";
  ns.spec_json = kSpec;
  s.sweep = s.store->create_sweep(ns).value();
  trials::NewTrial nt;
  nt.sweep_id = s.sweep;
  nt.number = 0;
  nt.limit = 4;
  nt.params = trials::params_from_json(R"({"x":0.5})").value();
  s.trial = s.store->create_trial(nt).value().id;
  auto claimed = s.store->claim("w1", 1, 60'000);
  const int attempt = claimed.ok() && claimed->has_value() ? (*claimed)->trial.attempt : 0;
  trials::StepReport r;
  r.step = 1;
  r.metrics["value"] = 0.25;
  (void)s.store->report(s.trial, attempt, "w1", r);
  return s;
}

std::string substitute(std::string text, const Seeded& s) {
  for (auto [mark, id] : {std::pair<std::string, std::string>{"@S", s.sweep}, {"@T", s.trial}}) {
    for (std::size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at))
      text.replace(at, mark.size(), id), at += id.size();
  }
  return text;
}

void check(const web::Response& res) {
  if (res.status < 200 || res.status >= 600) std::abort();
  if (res.stream || res.content_type != "application/json") return;
  auto j = nlohmann::json::parse(res.body, nullptr, false);
  if (j.is_discarded()) std::abort();
  if (res.status >= 400 && !(j.is_object() && j.contains("error"))) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const web::ServerOptions limits;
  if (size == 0) return 0;
  Seeded seeded = seed_store();
  std::string input = substitute(std::string(reinterpret_cast<const char*>(data), size), seeded);

  web::EventHub hub(16);
  web::ApiOptions options;
  options.token = "tok";
  options.auth_reads = (size % 2) == 1;  // both auth modes
  // The seeding connection first, then new ones on the input's prefix.
  auto first = std::make_shared<std::unique_ptr<trials::Store>>(std::move(seeded.store));
  web::Api api(
      options,
      [first, prefix = seeded.prefix]() -> Result<std::unique_ptr<trials::Store>> {
        if (*first) return std::move(*first);
        return std::unique_ptr<trials::Store>(hpo::testing::open_test_store(prefix));
      },
      hub);

  beast::flat_buffer buffer;
  auto in = buffer.prepare(input.size());
  std::memcpy(in.data(), input.data(), input.size());
  buffer.commit(input.size());
  for (int n = 0; n < 8 && buffer.size() > 0; ++n) {
    http::request_parser<http::string_body> parser;
    parser.eager(true);
    parser.body_limit(limits.body_limit);
    parser.header_limit(limits.header_limit);
    beast::error_code ec;
    std::size_t used = parser.put(buffer.data(), ec);
    if (!ec && !parser.is_done()) {
      parser.put_eof(ec);  // the connection ends here
    }
    buffer.consume(used);
    if (ec || !parser.is_done()) break;
    auto msg = parser.release();
    web::Request req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    if (!web::parse_target(req.target, req.path, req.query)) continue;
    for (const auto& f : msg) {
      auto [it, inserted] = req.headers.emplace(web::ascii_lower(std::string(f.name_string())),
                                                std::string(f.value()));
      if (!inserted) it->second += ", " + std::string(f.value());
    }
    req.body = std::move(msg.body());
    req.remote = "127.0.0.1:1";
    web::Response res = api.handle(req);
    check(res);
  }
  return 0;
}
