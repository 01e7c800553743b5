#include "web/access_control.hpp"

#include <string_view>
#include <utility>

namespace hpo::web {

namespace {

bool constant_time_equal(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

PrincipalPtr make(std::string user, bool service_admin, bool reads_everything) {
  auto p = std::make_shared<trials::Principal>();
  p->user = std::move(user);
  p->service_admin = service_admin;
  p->reads_everything = reads_everything;
  return p;
}

}  // namespace

AccessControl::AccessControl(std::string bootstrap_token, bool auth_reads,
                             trials::StoreFactory factory)
    : bootstrap_token_(std::move(bootstrap_token)),
      auth_reads_(auth_reads),
      factory_(std::move(factory)),
      root_(make("", true, true)),
      admin_(make(std::string(trials::kBootstrapAdmin), true, true)),
      reader_(make("", false, true)),
      nobody_(make("", false, false)) {}

std::string AccessControl::bearer(const Request& request) {
  std::string auth = request.header("authorization");
  constexpr std::string_view prefix = "Bearer ";
  if (auth.size() > prefix.size() &&
      iequals(std::string_view(auth).substr(0, prefix.size()), prefix))
    return auth.substr(prefix.size());
  return "";
}

std::string AccessControl::issue_ticket(const PrincipalPtr& who, const std::string& digest,
                                        std::chrono::milliseconds ttl) {
  const std::string ticket = trials::random_hex(32);  // 256 bits, as a token's
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  if (tickets_.size() >= kMaxTickets)
    std::erase_if(tickets_, [&](const auto& e) { return e.second.until <= now; });
  if (tickets_.size() >= kMaxTickets) tickets_.clear();  // a flood: the honest ask again
  tickets_[ticket] = {who, digest, now + ttl};
  return ticket;
}

Result<std::unique_ptr<trials::Store>*> AccessControl::store_locked() {
  if (!store_) {
    auto made = factory_();
    if (!made) return made.error();
    store_ = std::move(*made);
  }
  return &store_;
}

Result<PrincipalPtr> AccessControl::by_digest(const std::string& digest) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  if (const PrincipalPtr* known = by_digest_.find(digest, now)) return *known;
  auto store = store_locked();
  if (!store) return store.error();
  auto found = (**store)->access().resolve_token(digest);
  if (!found) {
    if (found.error().code == ErrorCode::kUnavailable) store_.reset();
    return found.error();
  }
  PrincipalPtr p = *found ? std::make_shared<const trials::Principal>(std::move(**found)) : nullptr;
  by_digest_.put(digest, p, now);
  return p;
}

Result<bool> AccessControl::one_person() {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  if (now - users_at_ < std::chrono::seconds(1)) return one_person_;
  auto store = store_locked();
  if (!store) return store.error();
  auto users = (**store)->access().list_users();
  if (!users) {
    if (users.error().code == ErrorCode::kUnavailable) store_.reset();
    return users.error();
  }
  one_person_ = users->size() <= 1;
  users_at_ = now;
  return one_person_;
}

Result<PrincipalPtr> AccessControl::identify(const Request& request, std::string* digest) {
  if (open()) return root_;
  if (request.path == "/api/events" && request.method == "GET")
    if (auto it = request.query.find("ticket"); it != request.query.end()) {
      std::lock_guard lock(mu_);
      auto found = tickets_.find(it->second);
      if (found == tickets_.end() || found->second.until <= std::chrono::steady_clock::now()) {
        if (found != tickets_.end()) tickets_.erase(found);
        return Error{ErrorCode::kUnauthorized,
                     "this stream ticket is unknown, used or expired: ask for another "
                     "(POST /api/events/ticket)",
                     {}};
      }
      Ticket t = std::move(found->second);
      tickets_.erase(found);
      if (digest) *digest = t.digest;
      return t.principal;
    }
  const std::string token = bearer(request);
  if (!token.empty()) {
    if (constant_time_equal(token, bootstrap_token_)) return admin_;
    const std::string hashed = trials::token_digest(token);
    if (digest) *digest = hashed;
    auto p = by_digest(hashed);
    if (!p) return p.error();
    if (*p) return *p;
    return Error{ErrorCode::kUnauthorized, "this token is unknown or was revoked", {}};
  }
  if (request.path == "/healthz") return nobody_;
  const bool read = request.method == "GET" || request.method == "HEAD";
  if (read && !auth_reads_) {
    const bool api = request.path.rfind("/api/", 0) == 0 || request.path == "/metrics";
    if (!api || request.path == "/api/openapi.json") return nobody_;
    auto alone = one_person();
    if (!alone) return alone.error();
    if (*alone) return reader_;
    return Error{ErrorCode::kUnauthorized,
                 "this service has several users: reads need Authorization: Bearer <token>",
                 {}};
  }
  return Error{ErrorCode::kUnauthorized, "this call needs Authorization: Bearer <token>", {}};
}

}  // namespace hpo::web
