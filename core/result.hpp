// Result<T>: expected failures as values.
//
// A bad spec, a trial that does not exist, a lease that was lost, Redis being
// unreachable: these are not exceptional, so they travel as values and become
// HTTP statuses in exactly one place (web/api_errors.cpp). Exceptions stay for
// what cannot continue (programmer errors, out of memory).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/name_table.hpp"

namespace hpo {

enum class ErrorCode {
  kInvalidArgument,  // bad user input; `fields` says where
  kNotFound,
  kConflict,     // state changed under us (compare-and-set failed)
  kLeaseLost,    // fencing: the attempt is no longer the current one
  kUnavailable,  // Redis or another dependency unreachable; retry later
  kUnauthorized,
  kPayloadTooLarge,
  kInternal,
  kQuotaExceeded,  // a limit of its project (queued trials, active sweeps) is reached; the message
                   // says which
};

// The one spelling of each code: REST errors ({"error": {"code": ...}}), the
// OpenAPI document's enum, the CLI.
inline constexpr NameTable<ErrorCode, 9> kErrorCodeNames{
    {"invalid_argument", "not_found", "conflict", "lease_lost", "unavailable", "unauthorized",
     "payload_too_large", "internal", "quota_exceeded"}};
static_assert(static_cast<std::size_t>(ErrorCode::kQuotaExceeded) == 8);

// One offending field of a JSON document: `path` is a JSON pointer-like path
// ("parameters.lr.min", "trial.argv[2]").
struct FieldError {
  std::string path;
  std::string message;
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::vector<FieldError> fields;

  static Error invalid(std::string path, std::string message) {
    Error e{ErrorCode::kInvalidArgument, path + ": " + message, {}};
    e.fields.push_back({std::move(path), std::move(message)});
    return e;
  }
  static Error not_found(std::string m) { return {ErrorCode::kNotFound, std::move(m), {}}; }
  static Error conflict(std::string m) { return {ErrorCode::kConflict, std::move(m), {}}; }
  static Error lease_lost(std::string m) { return {ErrorCode::kLeaseLost, std::move(m), {}}; }
  static Error unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m), {}}; }
  static Error internal(std::string m) { return {ErrorCode::kInternal, std::move(m), {}}; }
};

inline const char* to_string(ErrorCode code) {
  return kErrorCodeNames(code);
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : e_(std::move(error)) {}  // NOLINT
  bool ok() const { return !e_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *e_; }

 private:
  std::optional<Error> e_;
};

using Status = Result<void>;

}  // namespace hpo
