#include "trials/access.hpp"

#include <openssl/rand.h>

#include <array>
#include <cstdio>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "trials/artifact_dir.hpp"

namespace hpo::trials {

std::string to_string(ProjectRole role) {
  switch (role) {
    case ProjectRole::kViewer:
      return "viewer";
    case ProjectRole::kMember:
      return "member";
    case ProjectRole::kAdmin:
      return "admin";
  }
  return "viewer";
}

std::optional<ProjectRole> parse_project_role(std::string_view text) {
  if (text == "viewer") return ProjectRole::kViewer;
  if (text == "member") return ProjectRole::kMember;
  if (text == "admin") return ProjectRole::kAdmin;
  return std::nullopt;
}

Status check_worker_name(const std::string& what, const std::string& name, bool prefix_ok) {
  const std::string_view bare = prefix_ok && name.size() > 1 && name.back() == '*'
                                    ? std::string_view(name).substr(0, name.size() - 1)
                                    : std::string_view(name);
  const bool plain = !bare.empty() && name.size() <= 128 &&
                     bare.find_first_not_of(
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                         "0123456789._-@") == std::string_view::npos;
  if (plain) return {};
  return Error::invalid(
      what, fmt::format("'{}' is not a worker name (1 to 128 of A-Z a-z 0-9 . _ - @{}): the name "
                        "hpo-worker runs with (--name, else the host name)",
                        name.substr(0, 140), prefix_ok ? "; or a prefix of names and '*'" : ""));
}

Result<WorkerTokenRecord> WorkerTokenRecord::as_worker(const std::string& name) const {
  auto refused = [&](const std::string& why) {
    return Error{ErrorCode::kUnauthorized, "worker token " + id + " " + why, {}};
  };
  if (!names_many()) {
    if (!name.empty() && name != host)
      return refused("is worker '" + host + "''s, not '" + name + "''s (start hpo-worker --name " +
                     host + ", or make a token for that name)");
    return *this;
  }
  const std::string prefix = host.substr(0, host.size() - 1);
  if (name.empty())
    return refused("is for the workers named '" + host +
                   "': this worker names none (an hpo-worker older than such tokens)");
  if (!check_worker_name("worker", name) || !name.starts_with(prefix))
    return refused("is for the workers named '" + host + "', not '" + name.substr(0, 140) +
                   "' (start hpo-worker --name " + prefix + "...)");
  WorkerTokenRecord one = *this;
  one.host = name;
  return one;
}

Status check_access_name(const std::string& what, const std::string& name) {
  auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  };
  bool ok = !name.empty() && name.size() <= 64 && plain(name.front()) && name.front() != '.' &&
            name.front() != '_' && name.front() != '-';
  for (char c : name) ok = ok && plain(c);
  if (ok) return {};
  return Error::invalid(what, fmt::format("'{}' is not a name: expected 1 to 64 of a-z 0-9 . _ -, "
                                          "starting with a letter or digit",
                                          name.substr(0, 80)));
}

std::optional<ProjectRole> Principal::role_in(const std::string& project) const {
  if (service_admin) return ProjectRole::kAdmin;
  if (auto it = roles.find(project); it != roles.end()) return it->second;
  if (reads_everything) return ProjectRole::kViewer;
  return std::nullopt;
}

bool Principal::can_read(const std::string& project) const {
  return role_in(project).has_value();
}

bool Principal::can_submit(const std::string& project) const {
  auto r = role_in(project);
  return r && *r != ProjectRole::kViewer;
}

bool Principal::can_manage(const std::string& project) const {
  auto r = role_in(project);
  return r && *r == ProjectRole::kAdmin;
}

bool Principal::can_change(const std::string& project, const std::string& owner) const {
  auto r = role_in(project);
  if (!r || *r == ProjectRole::kViewer) return false;
  return *r == ProjectRole::kAdmin || (!user.empty() && owner == user);
}

std::string random_hex(std::size_t bytes) {
  std::array<unsigned char, 64> buf{};
  if (bytes > buf.size() || RAND_bytes(buf.data(), static_cast<int>(bytes)) != 1) {
    // OpenSSL's generator failing is not something to paper over.
    std::fputs("hpo: the random generator failed: cannot make a token\n", stderr);
    std::abort();
  }
  std::string out;
  out.reserve(2 * bytes);
  for (std::size_t i = 0; i < bytes; ++i) out += fmt::format("{:02x}", buf[i]);
  return out;
}

NewToken make_token() {
  // 32 random bytes: 256 bits, which no one guesses; the id only names it.
  return {random_hex(6), "hpo_" + random_hex(32)};
}

Result<NewToken> store_new_token(const std::function<Status(const NewToken&)>& add) {
  for (int tries = 0; tries < 4; ++tries) {
    NewToken t = make_token();
    auto st = add(t);
    if (st) return t;
    if (st.error().code != ErrorCode::kConflict) return st.error();
  }
  return Error::internal("could not find a free token id");
}

std::string token_digest(std::string_view secret) {
  return sha256_hex(secret);
}

}  // namespace hpo::trials
