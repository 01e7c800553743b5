// Structured logs at state transitions: one line per event on stderr,
//   2026-11-29T10:00:00.123Z INFO trial queued sweep=ab12cd34 trial=ab12cd34-3
// Values containing spaces or quotes are quoted. search/ and ensemble/ never log.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hpo {

using LogFields = std::vector<std::pair<std::string, std::string>>;

enum class LogLevel { kDebug, kInfo, kWarn, kError };

void log_line(LogLevel level, std::string_view message, const LogFields& fields = {});
inline void log_info(std::string_view m, const LogFields& f = {}) {
  log_line(LogLevel::kInfo, m, f);
}
inline void log_warn(std::string_view m, const LogFields& f = {}) {
  log_line(LogLevel::kWarn, m, f);
}
inline void log_error(std::string_view m, const LogFields& f = {}) {
  log_line(LogLevel::kError, m, f);
}

// Lines below this level are dropped (default info; HPO_LOG_LEVEL=debug|info|warn|error).
void set_log_level(LogLevel level);

}  // namespace hpo
