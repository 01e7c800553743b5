// Small text helpers shared by the readers of user files (the torch trainer's
// CSV datasets, a command trial's prediction files): trimming a field and
// reading a number from all of it; and ASCII lower case (HTTP header names).
#pragma once

#include <cctype>
#include <charconv>
#include <string>
#include <string_view>

namespace hpo {

// ASCII letters in lower case, other bytes as they are.
inline std::string ascii_lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Without leading blanks and trailing blanks or a '\r' (a CRLF line).
inline std::string_view trim_field(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The whole (trimmed) field as a number, a leading '+' allowed; false if any of
// it is not part of the number. "nan" and "inf" parse: callers check finiteness.
template <class T>
bool parse_field(std::string_view s, T& out) {
  s = trim_field(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

}  // namespace hpo
