// The parts of `hpo` every command uses (common.hpp): errors as exit codes,
// the REST client's reading of a response, and the text forms the commands
// print, so that a sweep or a number reads the same in every command.
#include "cli/common.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "core/text.hpp"

namespace hpo::cli {

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "hpo: %s\n", message.c_str());
  return code;
}

namespace {
// A URL's parts that name one server: scheme, host (any case), port, base path.
auto server_key(const hpo::HttpUrl& u) {
  return std::tuple{u.tls, hpo::ascii_lower(u.host), u.port, u.base};
}
}  // namespace

bool issued_by(const hpo::LocalState& local, const hpo::HttpUrl& server) {
  auto api = hpo::parse_http_url(local.api);
  return api && server_key(*api) == server_key(server);
}

int http_error(const hpo::ClientResponse& r, const std::string& hint) {
  std::string message = fmt::format("HTTP {}", r.status);
  auto j = Json::parse(r.body, nullptr, false);
  std::vector<std::string> fields;
  if (!j.is_discarded() && j.contains("error") && j["error"].is_object()) {
    const auto& e = j["error"];
    message = e.value("message", message);
    if (e.contains("fields") && e["fields"].is_array())
      for (const auto& f : e["fields"])
        fields.push_back(f.value("path", "") + ": " + f.value("message", ""));
  }
  int code = r.status == 400 || r.status == 413   ? kUsage
             : r.status == 404                    ? kNotFound
             : r.status == 401 || r.status == 403 ? kUnauthorized
                                                  : kUnreachable;
  fail(code, message);
  for (const auto& f : fields) std::fprintf(stderr, "  %s\n", f.c_str());
  if (r.status == 401 && !hint.empty()) std::fprintf(stderr, "  %s\n", hint.c_str());
  return code;
}

std::optional<Json> Client::call(const std::string& method, const std::string& path, int& exit_code,
                                 const std::string& body, std::string* raw,
                                 std::map<std::string, std::string> headers) {
  if (!body.empty()) headers.emplace("Content-Type", "application/json");
  return interpret(http.request(method, path, body, headers), exit_code, raw);
}

std::optional<Json> Client::interpret(const hpo::Result<hpo::ClientResponse>& r, int& exit_code,
                                      std::string* raw) {
  if (!r) {
    exit_code = fail(kUnreachable, "cannot reach the scheduler: " + r.error().message);
    return std::nullopt;
  }
  if (r->status < 200 || r->status >= 300) {
    exit_code = http_error(*r, unauthorized_hint);
    return std::nullopt;
  }
  if (raw) {
    *raw = r->body;
    return Json::object();
  }
  auto j = Json::parse(r->body, nullptr, false);
  if (j.is_discarded()) {
    exit_code = fail(kUnreachable, "the server answered with something that is not JSON");
    return std::nullopt;
  }
  return j;
}

std::string fmt_number(double v) {
  return std::isfinite(v) ? fmt::format("{:.6g}", v) : "-";
}

std::string fmt_params(const hpo::search::Params& params) {
  std::string s;
  for (const auto& [name, value] : params) {
    std::string text = std::visit(
        [](const auto& x) -> std::string {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, double>)
            return fmt_number(x);
          else if constexpr (std::is_same_v<T, bool>)
            return x ? "true" : "false";
          else if constexpr (std::is_same_v<T, std::string>)
            return x;
          else
            return std::to_string(x);
        },
        value);
    s += (s.empty() ? "" : " ") + name + "=" + text;
  }
  return s;
}

std::string fmt_duration(double seconds) {
  auto s = static_cast<long>(seconds);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{:02}:{:02}", s / 60, s % 60);
}

std::string fmt_bytes(std::int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{} {}", fmt_number(std::round(v * 10) / 10), kUnits[unit]);
}

std::optional<std::int64_t> parse_byte_size(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !(v >= 0)) return std::nullopt;
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  for (const char* tail : {"iB", "B"})
    if (unit.size() > std::strlen(tail) && unit.ends_with(tail))
      unit.resize(unit.size() - std::strlen(tail));
  static const std::string kPrefixes = "KMGTP";
  int power = 0;
  if (!unit.empty() && unit != "B") {
    const auto at =
        unit.size() == 1
            ? kPrefixes.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))))
            : std::string::npos;
    if (at == std::string::npos) return std::nullopt;
    power = static_cast<int>(at) + 1;
  }
  const double bytes = v * std::pow(1024.0, power);
  if (bytes > 9.0e18) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(bytes));
}

void print_sweep(const record::SweepDocument& d) {
  const auto& s = d.sweep;
  const auto& c = s.counts;
  std::printf("sweep %s  %s\n", s.id.c_str(), s.name.c_str());
  std::printf("  state      %s (stage %s)\n", hpo::trials::to_string(s.state),
              hpo::trials::to_string(s.stage));
  std::printf("  objective  %s %s\n", s.maximize ? "max" : "min", d.metric.c_str());
  for (const auto& b : d.constraints)
    std::printf("  constraint %s%s%s\n", b.min ? (fmt_number(*b.min) + " <= ").c_str() : "",
                b.metric.c_str(), b.max ? (" <= " + fmt_number(*b.max)).c_str() : "");
  std::printf(
      "  trials     %lld/%lld finished: %lld completed, %lld failed, %lld pruned, %lld "
      "cancelled; %lld running, %lld queued\n",
      static_cast<long long>(c.finished()), static_cast<long long>(d.max_trials),
      static_cast<long long>(c.completed), static_cast<long long>(c.failed),
      static_cast<long long>(c.pruned), static_cast<long long>(c.cancelled),
      static_cast<long long>(c.running), static_cast<long long>(c.queued));
  if (s.best)
    std::printf("  best       %s = %s  (trial %s%s)  %s\n", d.metric.c_str(),
                fmt_number(s.best->value).c_str(), s.best->trial_id.c_str(),
                d.constraints.empty() ? "" : ", within the constraints",
                fmt_params(s.best->params).c_str());
  if (!s.error.empty()) std::printf("  error      %s\n", s.error.c_str());
  if (!s.unschedulable.empty())
    std::printf("  waiting    unschedulable: %s\n", s.unschedulable.c_str());
}

}  // namespace hpo::cli
