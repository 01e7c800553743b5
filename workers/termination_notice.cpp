#include "workers/termination_notice.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/http_client.hpp"
#include "core/log.hpp"
#include "core/text.hpp"

namespace hpo::workers {
namespace {

constexpr std::size_t kBodyLimit = 64 * 1024;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<NoticeUrl> parse_notice_url(std::string_view url) {
  const std::string where = "--notice-url";
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme))
    return Error::invalid(where, fmt::format("'{}': expected http://HOST[:PORT][/PATH] (the "
                                             "metadata endpoints are plain HTTP)",
                                             url));
  std::string_view rest = url.substr(kScheme.size());
  NoticeUrl out;
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) out.target = std::string(rest.substr(slash));
  // host, host:port, [v6] or [v6]:port
  std::string_view host = authority, port;
  bool has_port = false;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos)
      return Error::invalid(where, fmt::format("'{}': an IPv6 address needs its ']'", url));
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':')
        return Error::invalid(where, fmt::format("'{}': expected ':PORT' after ']'", url));
      port = authority.substr(close + 2);
      has_port = true;
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    has_port = true;
  }
  if (has_port) {
    const std::string digits(port);
    char* end = nullptr;
    const long p = std::strtol(digits.c_str(), &end, 10);
    if (digits.empty() || *end != '\0' || p < 1 || p > 65535)
      return Error::invalid(where, fmt::format("'{}': the port '{}' is not 1..65535", url, digits));
    out.port = static_cast<int>(p);
  }
  authority = host;
  if (authority.empty()) return Error::invalid(where, fmt::format("'{}' names no host", url));
  out.host = std::string(authority);
  return out;
}

Result<std::pair<std::string, std::string>> parse_notice_header(std::string_view text) {
  const auto colon = text.find(':');
  const auto name =
      colon == std::string_view::npos ? std::string_view{} : trim(text.substr(0, colon));
  const bool token = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_';
  });
  const auto value =
      colon == std::string_view::npos ? std::string_view{} : trim(text.substr(colon + 1));
  if (!token || value.find_first_of("\r\n") != std::string_view::npos)
    return Error::invalid(
        "--notice-header",
        fmt::format("'{}': expected 'Name: value' (e.g. 'Metadata-Flavor: Google')", text));
  return std::pair{std::string(name), std::string(value)};
}

bool is_notice(int status, std::string_view body) {
  if (status != 200) return false;
  const auto b = trim(body);
  if (b.empty() || ascii_lower(std::string(b)) == "false") return false;
  if (b.front() == '{') {
    auto j = nlohmann::json::parse(b, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("Events") && j["Events"].is_array())
      return !j["Events"].empty();
  }
  return true;
}

Result<HttpAnswer> http_get(const NoticeUrl& url,
                            const std::vector<std::pair<std::string, std::string>>& headers,
                            std::chrono::milliseconds timeout) {
  HttpClient client(url.host, url.port, timeout);
  client.set_body_limit(kBodyLimit);
  std::map<std::string, std::string> sent;
  for (const auto& [name, value] : headers) sent[name] = value;
  auto got = client.request("GET", url.target, "", sent);
  if (!got) return got.error();
  return HttpAnswer{got->status, std::move(got->body)};
}

NoticeWatch::NoticeWatch(std::string file, std::string url,
                         std::vector<std::pair<std::string, std::string>> headers,
                         std::chrono::milliseconds timeout)
    : file_(std::move(file)),
      url_text_(std::move(url)),
      headers_(std::move(headers)),
      timeout_(timeout) {
  if (!url_text_.empty())
    if (auto u = parse_notice_url(url_text_)) url_ = std::move(*u);
}

std::string NoticeWatch::check(bool ask_url) {
  std::error_code ec;
  if (!file_.empty() && std::filesystem::exists(file_, ec)) return "notice file " + file_;
  if (!url_ || !ask_url) return "";
  auto got = http_get(*url_, headers_, timeout_);
  if (!got) {
    if (!failing_)
      log_warn("the termination-notice URL does not answer; polling on",
               {{"url", url_text_}, {"error", got.error().message}});
    failing_ = true;
    return "";
  }
  failing_ = false;
  if (!is_notice(got->status, got->body)) return "";
  return fmt::format("notice URL {} answered {}: {}", url_text_, got->status,
                     std::string(trim(got->body).substr(0, 200)));
}

}  // namespace hpo::workers
