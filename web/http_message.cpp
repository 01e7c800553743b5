#include "web/http_message.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace hpo::web {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string Request::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return "";
}

std::string Request::query_or(const std::string& name, std::string fallback) const {
  auto it = query.find(name);
  return it == query.end() ? fallback : it->second;
}

Response Response::json(int status, std::string body) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

FileBody::~FileBody() {
  if (fd >= 0) ::close(fd);
}

Response Response::text(int status, std::string body, std::string content_type) {
  Response r;
  r.status = status;
  r.content_type = std::move(content_type);
  r.body = std::move(body);
  return r;
}

std::string Response::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return "";
}

bool percent_decode(std::string_view in, std::string& out, bool plus_is_space) {
  out.clear();
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = hex_value(in[i + 1]);
      int lo = hex_value(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      char d = static_cast<char>(hi * 16 + lo);
      if (d == '\0') return false;
      out.push_back(d);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      if (c == '\0') return false;
      out.push_back(c);
    }
  }
  return true;
}

std::string percent_encode(std::string_view in) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : in) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

bool parse_target(std::string_view target, std::string& path,
                  std::map<std::string, std::string>& query) {
  query.clear();
  if (target.empty() || target[0] != '/') return false;
  auto q = target.find('?');
  std::string_view raw_path = target.substr(0, q);
  if (!percent_decode(raw_path, path, false)) return false;
  if (q == std::string_view::npos) return true;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    auto amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    std::string key, value;
    if (!percent_decode(pair.substr(0, eq), key, true)) return false;
    if (eq != std::string_view::npos && !percent_decode(pair.substr(eq + 1), value, true))
      return false;
    query[key] = value;
  }
  return true;
}

}  // namespace hpo::web
