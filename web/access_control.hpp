// AccessControl: who a request comes from (trials/access.hpp's Principal).
//
//   no scheduler token          open mode (tests, a private socket): everyone is a service admin
//   Bearer <the scheduler's>    the bootstrap admin (a service admin), without a store read
//   Bearer <a user's token>     that user with their roles; the store's answer is kept
//                               kTtl, so a revoked token is refused within that
//   GET /api/events?ticket=T    the caller who asked for T (POST /api/events/ticket) a
//                               moment ago: an EventSource cannot send headers, and a
//                               token never goes into a URL (logs, history, Referer); a
//                               ticket opens one stream, once, within kTicketTtl
//   no token                    /healthz; and, unless reads need a token (--auth-reads),
//                               the dashboard's files, the OpenAPI document, and reads of
//                               everything while the service has one user at most (the
//                               one-person install); else 401
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/expiring_map.hpp"
#include "core/result.hpp"
#include "trials/access.hpp"
#include "trials/store.hpp"
#include "web/http_message.hpp"

namespace hpo::web {

using PrincipalPtr = std::shared_ptr<const trials::Principal>;

class AccessControl {
 public:
  AccessControl(std::string bootstrap_token, bool auth_reads, trials::StoreFactory factory);

  static constexpr std::chrono::milliseconds kTtl{500};
  static constexpr std::size_t kMaxCached = 10000;  // tokens remembered at once
  static constexpr std::chrono::milliseconds kTicketTtl{60'000};
  static constexpr std::size_t kMaxTickets = 10'000;

  // Who sent `request`; kUnauthorized when it may not be answered at all.
  // `digest`, when given, gets the digest of the user's token behind it (""
  // for the scheduler's own, or none), so a stream can follow its revocation.
  Result<PrincipalPtr> identify(const Request& request, std::string* digest = nullptr);
  // A ticket that opens one event stream as `who` (whose token has `digest`)
  // within `ttl`: 256 random bits, kept here only, used once.
  std::string issue_ticket(const PrincipalPtr& who, const std::string& digest,
                           std::chrono::milliseconds ttl = kTicketTtl);
  // The user behind a token digest now (at most kTtl old); null when there is
  // none (revoked, unknown).
  Result<PrincipalPtr> by_digest(const std::string& digest);
  // The token a request carries in its Authorization header ("" when none).
  static std::string bearer(const Request& request);
  bool open() const { return bootstrap_token_.empty(); }
  // The scheduler's own token's principal (not in the store, not revocable).
  bool is_bootstrap(const PrincipalPtr& p) const { return p == admin_; }
  // Whether the service has one user at most (at most a second old).
  Result<bool> one_person();

 private:
  Result<std::unique_ptr<trials::Store>*> store_locked();

  std::string bootstrap_token_;
  bool auth_reads_;
  trials::StoreFactory factory_;
  PrincipalPtr root_;    // open mode
  PrincipalPtr admin_;   // the scheduler's token
  PrincipalPtr reader_;  // anonymous reader of everything (one-person install)
  PrincipalPtr nobody_;  // anonymous, no rights

  std::mutex mu_;  // everything below
  std::unique_ptr<trials::Store> store_;
  ExpiringMap<PrincipalPtr> by_digest_{kTtl, kMaxCached};  // null: no such token
  std::chrono::steady_clock::time_point users_at_{};
  bool one_person_ = true;
  struct Ticket {
    PrincipalPtr principal;
    std::string digest;
    std::chrono::steady_clock::time_point until;
  };
  std::unordered_map<std::string, Ticket> tickets_;
};

}  // namespace hpo::web
