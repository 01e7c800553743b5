#include "workers/termination_notice.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/log.hpp"

namespace hpo::workers {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kBodyLimit = 64 * 1024;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<std::int64_t>(0, left.count()));
}

// Waits for `events` on fd until the deadline: false when it passed first.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, ms_left(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

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
  if (b.empty() || lower(b) == "false") return false;
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
  const auto deadline = Clock::now() + timeout;
  const std::string what = fmt::format("GET http://{}:{}{}", url.host, url.port, url.target);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(url.port);
  if (int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    return Error::unavailable(
        fmt::format("{}: cannot resolve {}: {}", what, url.host, ::gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addrs(found, ::freeaddrinfo);
  Fd sock;
  std::string why = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    Fd s{::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol)};
    if (s.fd < 0) continue;
    if (::connect(s.fd, a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        why = std::strerror(errno);
        continue;
      }
      if (!wait_fd(s.fd, POLLOUT, deadline)) {
        why = "timed out connecting";
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        why = std::strerror(err);
        continue;
      }
    }
    std::swap(sock.fd, s.fd);
    break;
  }
  if (sock.fd < 0) return Error::unavailable(fmt::format("{}: {}", what, why));

  std::string request =
      fmt::format("GET {} HTTP/1.0\r\nHost: {}\r\nConnection: close\r\n", url.target, url.host);
  for (const auto& [name, value] : headers) request += fmt::format("{}: {}\r\n", name, value);
  request += "\r\n";
  for (std::size_t sent = 0; sent < request.size();) {
    if (!wait_fd(sock.fd, POLLOUT, deadline))
      return Error::unavailable(what + ": timed out sending");
    const ssize_t n = ::send(sock.fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return Error::unavailable(fmt::format("{}: {}", what, std::strerror(errno)));
    if (n > 0) sent += static_cast<std::size_t>(n);
  }
  std::string raw;
  char buf[4096];
  for (;;) {
    if (!wait_fd(sock.fd, POLLIN, deadline))
      return Error::unavailable(what + ": timed out reading");
    const ssize_t n = ::recv(sock.fd, buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return Error::unavailable(fmt::format("{}: {}", what, std::strerror(errno)));
    }
    raw.append(buf, static_cast<std::size_t>(n));
    if (raw.size() > kBodyLimit + 16 * 1024) break;  // enough to judge; the rest is dropped
  }
  // "HTTP/1.x NNN reason\r\n" headers "\r\n\r\n" body
  HttpAnswer out;
  if (raw.size() < 12 || !raw.starts_with("HTTP/1.") || raw[8] != ' ')
    return Error::unavailable(what + ": not an HTTP answer");
  out.status = std::atoi(raw.c_str() + 9);
  const auto end = raw.find("\r\n\r\n");
  if (end != std::string::npos) out.body = raw.substr(end + 4, kBodyLimit);
  return out;
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
