#include "core/settings.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace hpo {

Result<std::vector<std::pair<std::string, std::string>>> read_settings_file(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::invalid("--config", "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error::invalid("--config", path + " is not a JSON object");
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = j.begin(); it != j.end(); ++it)
    out.emplace_back(it.key(), it->is_string() ? it->get<std::string>() : it->dump());
  return out;
}

Status parse_setting_int(const std::string& origin, const std::string& text, std::int64_t lo,
                         std::int64_t hi, std::int64_t& out) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || v < lo || v > hi)
    return Error::invalid(origin,
                          fmt::format("\"{}\" is not an integer from {} to {}", text, lo, hi));
  out = v;
  return {};
}

Status parse_setting_number(const std::string& origin, const std::string& text, double lo,
                            double hi, double& out) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi)
    return Error::invalid(origin,
                          fmt::format("\"{}\" is not a number from {} to {}", text, lo, hi));
  out = v;
  return {};
}

bool parse_setting_switch(const std::string& text) {
  return text == "1" || text == "true";
}

std::vector<std::string> split_setting_list(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t at = text.find(separator, start);
    out.push_back(text.substr(start, at == std::string::npos ? at : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

}  // namespace hpo
