#include "core/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace hpo {
namespace {

LogLevel initial_level() {
  const char* env = std::getenv("HPO_LOG_LEVEL");
  std::string_view v = env ? env : "info";
  if (v == "debug") return LogLevel::kDebug;
  if (v == "warn") return LogLevel::kWarn;
  if (v == "error") return LogLevel::kError;
  return LogLevel::kInfo;
}

std::atomic<LogLevel> g_level{initial_level()};
std::mutex g_mutex;

void append_value(std::string& out, std::string_view v) {
  bool quote = v.empty() || v.find_first_of(" \"=\n\t") != std::string_view::npos;
  if (!quote) {
    out += v;
    return;
  }
  out += '"';
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
}

}  // namespace

void set_log_level(LogLevel level) {
  g_level = level;
}

void log_line(LogLevel level, std::string_view message, const LogFields& fields) {
  if (level < g_level.load()) return;
  static constexpr const char* kNames[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string line = stamp;
  line += '.' + std::to_string(1000 + ms).substr(1) + "Z ";
  line += kNames[static_cast<int>(level)];
  line += ' ';
  line += message;
  for (const auto& [k, v] : fields) {
    line += ' ';
    line += k;
    line += '=';
    append_value(line, v);
  }
  line += '\n';
  std::lock_guard lock(g_mutex);
  std::fputs(line.c_str(), stderr);
}

}  // namespace hpo
