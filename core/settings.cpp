#include "core/settings.hpp"

#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text.hpp"

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

Status check_private_file(const std::string& origin, const std::string& path, bool must_exist) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return must_exist ? Error::invalid(origin, path + " does not exist") : Status{};
  if ((st.st_mode & 077) != 0)
    return Error::invalid(
        origin, fmt::format("{} is readable by other users (mode {:o}); chmod 600 it", path,
                            st.st_mode & 0777));
  return {};
}

Result<std::string> read_private_file(const std::string& origin, const std::string& path) {
  if (auto st = check_private_file(origin, path, false); !st) return st.error();
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line) || trim_field(line).empty())
    return Error::invalid(origin, "cannot read a token from " + path);
  return std::string(trim_field(line));
}

}  // namespace hpo
