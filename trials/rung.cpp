#include "trials/rung.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace hpo::trials {

std::string rung_to_json(const RungInfo& r) {
  nlohmann::json j = {{"budget", r.budget}, {"resource", r.resource}};
  if (r.member >= 0) {
    j["member"] = r.member;
    j["generation"] = r.rung;
    if (r.exploited) j["exploited"] = true;
  } else {
    j["bracket"] = r.bracket;
    j["rung"] = r.rung;
  }
  if (!r.resume_from.empty()) {
    j["resume_from"] = r.resume_from;
    j["resume_number"] = r.resume_number;
  }
  return j.dump();
}

Result<std::optional<RungInfo>> rung_from_json(std::string_view extra) {
  if (extra.empty()) return std::optional<RungInfo>{};
  auto j = nlohmann::json::parse(extra, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("budget")) return std::optional<RungInfo>{};
  RungInfo r;
  const auto& b = j["budget"];
  if (!b.is_number() || !(b.get<double>() > 0) || !std::isfinite(b.get<double>()))
    return Error::invalid("extra.budget", "expected a positive number");
  r.budget = b.get<double>();
  if (auto it = j.find("resource"); it != j.end() && it->is_string()) r.resource = *it;
  auto small = [&](const char* key, std::int64_t hi) -> Result<int> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0 ||
        it->get<std::int64_t>() > hi)
      return Error::invalid(std::string("extra.") + key,
                            fmt::format("expected an integer in [0, {}]", hi));
    return it->get<int>();
  };
  if (j.contains("member")) {
    auto m = small("member", 100'000);
    if (!m) return m.error();
    auto g = small("generation", 1'000'000);
    if (!g) return g.error();
    r.member = *m;
    r.rung = *g;
    if (auto it = j.find("exploited"); it != j.end()) {
      if (!it->is_boolean()) return Error::invalid("extra.exploited", "expected true or false");
      r.exploited = it->get<bool>();
    }
  } else {
    auto b = small("bracket", 64);
    if (!b) return b.error();
    auto g = small("rung", 64);
    if (!g) return g.error();
    r.bracket = *b;
    r.rung = *g;
  }
  if (auto it = j.find("resume_from"); it != j.end()) {
    auto n = j.find("resume_number");
    if (!it->is_string() || it->get<std::string>().empty() || n == j.end() ||
        !n->is_number_integer() || n->get<std::int64_t>() < 0)
      return Error::invalid("extra.resume_from",
                            "expected the id and number of the trial it resumes");
    r.resume_from = *it;
    r.resume_number = n->get<std::int64_t>();
  }
  return std::optional<RungInfo>{std::move(r)};
}

std::string budget_text(double budget) {
  if (std::floor(budget) == budget && std::fabs(budget) < 1e15)
    return fmt::format("{}", static_cast<std::int64_t>(budget));
  return fmt::format("{}", budget);
}

}  // namespace hpo::trials
