// Settings: the one configuration engine of hpo's programs (hpo-scheduler,
// hpo-worker). A program describes each setting once in a table: its flag,
// its environment variable, its key in a --config file, and how a value is
// applied to the program's typed config struct. The engine reads the sources
// in order of precedence, each later one winning:
//
//   defaults (the struct's) < --config FILE (a JSON object, where the program
//   accepts one) < environment (HPO_*) < flags (--flag VALUE or --flag=VALUE)
//
// A switch (--auth-reads) takes no value on the command line and reads 1 or
// true elsewhere. A list setting (--data-root, repeatable; colon- or comma-
// separated in the environment and the file) is replaced, not merged, by a
// later source. --help or -h stops reading and sets `help`. Every error is
// kInvalidArgument naming where the value came from: the flag, the variable,
// or "FILE: key".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace hpo {

// getenv, or a test's own table.
using EnvLookup = std::function<const char*(const char*)>;

enum class SettingKind { kValue, kSwitch, kList };

template <class Config>
struct Setting {
  const char* flag;  // "--listen"
  const char* env;   // "HPO_LISTEN"
  const char* key;   // the --config file's key ("listen"); nullptr: not in a file
  SettingKind kind;
  // Applies one value (for a list: one item) read from `origin`.
  std::function<Status(Config&, const std::string& origin, const std::string& value)> apply;
  // kList: empties the list before a later source's items.
  std::function<void(Config&)> clear;
  char separator = ':';  // kList: between items in the environment and the file
};

// The key/value pairs of a --config file (values as text; non-strings dumped).
Result<std::vector<std::pair<std::string, std::string>>> read_settings_file(
    const std::string& path);

// Value parsers with the one wording of their errors.
Status parse_setting_int(const std::string& origin, const std::string& text, std::int64_t lo,
                         std::int64_t hi, std::int64_t& out);
Status parse_setting_number(const std::string& origin, const std::string& text, double lo,
                            double hi, double& out);
bool parse_setting_switch(const std::string& text);  // "1" or "true"
std::vector<std::string> split_setting_list(const std::string& text, char separator);

// A secret's file (a token, a TLS key) must not be readable by other users
// ("chmod 600 it", naming `origin`); `must_exist`: a missing file is an error
// here rather than later.
Status check_private_file(const std::string& origin, const std::string& path, bool must_exist);
// The secret on the first line of such a file, trimmed; an error naming
// `origin` when the file is readable by others, missing or holds none.
Result<std::string> read_private_file(const std::string& origin, const std::string& path);

// Rows for the common kinds of setting: a text field, a switch, a number of
// seconds at least 0, an integer within [lo, hi].
template <class Config>
Setting<Config> text_setting(const char* flag, const char* env, const char* key,
                             std::string Config::*field) {
  return {flag, env, key, SettingKind::kValue,
          [field](Config& c, const std::string&, const std::string& v) -> Status {
            c.*field = v;
            return {};
          }};
}
template <class Config>
Setting<Config> switch_setting(const char* flag, const char* env, const char* key,
                               bool Config::*field) {
  return {flag, env, key, SettingKind::kSwitch,
          [field](Config& c, const std::string&, const std::string& v) -> Status {
            c.*field = parse_setting_switch(v);
            return {};
          }};
}
template <class Config>
Setting<Config> seconds_setting(const char* flag, const char* env, const char* key,
                                double Config::*field) {
  return {flag, env, key, SettingKind::kValue,
          [field](Config& c, const std::string& origin, const std::string& v) {
            return parse_setting_number(origin, v, 0, 1e12, c.*field);
          }};
}

template <class Config, class Int>
Setting<Config> int_setting(const char* flag, const char* env, const char* key, Int Config::*field,
                            std::int64_t lo, std::int64_t hi) {
  return {flag, env, key, SettingKind::kValue,
          [field, lo, hi](Config& c, const std::string& origin, const std::string& v) -> Status {
            std::int64_t n = 0;
            if (auto st = parse_setting_int(origin, v, lo, hi, n); !st) return st;
            c.*field = static_cast<Int>(n);
            return {};
          }};
}

template <class Config>
Status load_settings(const std::vector<Setting<Config>>& table,
                     const std::vector<std::string>& args, const EnvLookup& env,
                     bool accepts_config_file, Config& out, bool& help) {
  // A list given in a later source replaces the earlier ones' items.
  auto apply_all = [](const Setting<Config>& s, Config& c, const std::string& origin,
                      const std::string& value, bool split) -> Status {
    if (s.kind == SettingKind::kSwitch) return s.apply(c, origin, value);
    if (s.kind != SettingKind::kList || !split) return s.apply(c, origin, value);
    for (const auto& item : split_setting_list(value, s.separator))
      if (auto st = s.apply(c, origin, item); !st) return st;
    return {};
  };
  // The command line first (it may name the config file), applied last.
  std::vector<std::pair<const Setting<Config>*, std::string>> flags;
  std::string config_file;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help = true;
      return {};
    }
    std::string value;
    bool inline_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inline_value = true;
    }
    if (accepts_config_file && arg == "--config") {
      if (!inline_value) {
        if (i + 1 >= args.size()) return Error::invalid(arg, "needs a value");
        value = args[++i];
      }
      config_file = value;
      continue;
    }
    const Setting<Config>* found = nullptr;
    for (const auto& s : table)
      if (arg == s.flag) found = &s;
    if (!found) return Error::invalid(arg, "unknown flag (see --help)");
    if (!inline_value) {
      if (found->kind == SettingKind::kSwitch)
        value.assign(1, '1');  // (not = "1": a GCC 12 -Wrestrict false positive)
      else if (i + 1 >= args.size())
        return Error::invalid(arg, "needs a value");
      else
        value = args[++i];
    }
    flags.emplace_back(found, value);
  }
  if (!config_file.empty()) {
    auto pairs = read_settings_file(config_file);
    if (!pairs) return pairs.error();
    for (const auto& [key, value] : *pairs) {
      const Setting<Config>* found = nullptr;
      for (const auto& s : table)
        if (s.key && key == s.key) found = &s;
      const std::string origin = config_file + ": " + key;
      if (!found) return Error::invalid(origin, "unknown setting");
      if (auto st = apply_all(*found, out, origin, value, true); !st) return st;
    }
  }
  for (const auto& s : table) {
    const char* v = env ? env(s.env) : nullptr;
    if (!v || !*v) continue;
    if (s.kind == SettingKind::kList && s.clear) s.clear(out);
    if (auto st = apply_all(s, out, s.env, v, true); !st) return st;
  }
  for (const auto& s : table)
    if (s.kind == SettingKind::kList && s.clear)
      for (const auto& f : flags)
        if (f.first == &s) {
          s.clear(out);
          break;
        }
  for (const auto& [s, value] : flags)
    if (auto st = apply_all(*s, out, s->flag, value, true); !st) return st;
  return {};
}

}  // namespace hpo
