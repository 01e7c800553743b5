// What every `hpo` command shares: the exit codes, the REST client that turns
// an HTTP failure into one of them, the decoding of the server's documents and
// the text forms of numbers, parameters and sweeps. One header so that each
// command file reads only its own commands.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/http_client.hpp"
#include "core/local_state.hpp"
#include "core/result.hpp"
#include "search/space.hpp"
#include "trials/record_json.hpp"

namespace hpo::cli {

namespace record = hpo::trials::record;
using record::Json;

enum Exit {
  kOk = 0,
  kSweepFailed = 1,
  kUsage = 2,
  kCancelled = 3,
  kUnreachable = 4,
  kNotFound = 5,
  kUnauthorized = 6
};

int fail(int code, const std::string& message);

// Maps an HTTP error response to an exit code, printing the server's message
// and each field error with its path (and, on a 401, the hint set below).
// `hint` is printed after a 401 (why no token was sent).
int http_error(const hpo::ClientResponse& r, const std::string& hint = "");

// Whether `server` is the scheduler that wrote the local state (same scheme,
// host, port and base path): only then may its admin token be sent there.
bool issued_by(const hpo::LocalState& local, const hpo::HttpUrl& server);

struct Client {
  hpo::HttpClient http;           // prefixes every target with the URL's base path
  std::string unauthorized_hint;  // what a 401 adds: why no token was sent

  Client(const hpo::HttpUrl& url, const std::string& token)
      : http(url, std::chrono::milliseconds(15000)) {
    http.set_token(token);
  }
  // Returns the parsed body of a 2xx response, or sets `exit_code`.
  std::optional<Json> call(const std::string& method, const std::string& path, int& exit_code,
                           const std::string& body = "", std::string* raw = nullptr,
                           std::map<std::string, std::string> headers = {});
  // A response (or the failure to get one) as call() returns it.
  std::optional<Json> interpret(const hpo::Result<hpo::ClientResponse>& r, int& exit_code,
                                std::string* raw = nullptr);
};

std::string fmt_number(double v);
std::string fmt_params(const hpo::search::Params& params);
std::string fmt_duration(double seconds);
// Bytes in binary units ("512 B", "1.5 MiB", "100 GiB").
std::string fmt_bytes(std::int64_t bytes);
// A byte count as a user writes it: "1000000", "512MiB", "2 GiB", "1.5G" (K M G T: powers
// of 1024, with or without "iB"/"B"); nullopt for anything else or a negative size.
std::optional<std::int64_t> parse_byte_size(const std::string& text);

// A document of the server decoded with the records' codec; a document that
// does not decode is the server's fault (exit code 4, the field named).
template <class T>
std::optional<T> decode(const Json& j, int& exit_code) {
  T out;
  if (auto st = record::from_json(j, out); !st) {
    exit_code = fail(kUnreachable, "the server's answer does not decode: " + st.error().message);
    return std::nullopt;
  }
  return out;
}

template <class T>
std::optional<std::vector<T>> decode_list(const Json& j, const char* key, int& exit_code) {
  std::vector<T> out;
  if (auto st = record::from_json_list(j, key, out); !st) {
    exit_code = fail(kUnreachable, "the server's answer does not decode: " + st.error().message);
    return std::nullopt;
  }
  return out;
}

void print_sweep(const record::SweepDocument& d);

}  // namespace hpo::cli
