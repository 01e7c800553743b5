// Termination notices: how a worker on a spot or preemptible host learns it
// is about to be taken away, so that it drains (trials that checkpoint stop
// with one and are released, no attempt counted) before the host goes.
//
// Two sources, besides SIGTERM (main.cpp):
//   a notice file: the notice is that the file exists (written by whatever
//     watches the cloud: a node agent, a Kubernetes preStop hook, an operator);
//   a notice URL: the clouds' instance-metadata endpoints, polled over plain
//     HTTP (they are link-local; there is no TLS to speak). The answer is a
//     notice when it is 200 with a body that says so (is_notice below):
//       AWS   http://169.254.169.254/latest/meta-data/spot/instance-action
//             (404 until a stop is scheduled, then 200 with {"action": ...});
//       GCP   http://metadata.google.internal/computeMetadata/v1/instance/preempted
//             with --notice-header 'Metadata-Flavor: Google' ("FALSE", then "TRUE");
//       Azure http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01
//             with --notice-header 'Metadata: true' ({"Events": []} until one is scheduled).
//     AWS's IMDSv2 (a session token first) is not spoken: use a notice file
//     written by the node's own watcher there.
// A URL that cannot be reached is not a notice (the metadata server's own
// outage must not drain a pool); it is logged once per run of failures.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace hpo::workers {

// "http://host[:port][/path]": kInvalidArgument naming what is wrong otherwise.
struct NoticeUrl {
  std::string host;
  int port = 80;
  std::string target = "/";
};
Result<NoticeUrl> parse_notice_url(std::string_view url);

// "Name: value" (a header sent with every poll of the URL).
Result<std::pair<std::string, std::string>> parse_notice_header(std::string_view text);

// Whether an answer of the notice URL is a termination notice: status 200 and
// a body that is not empty, not "false" (any case) and not a JSON object whose
// "Events" list is empty.
bool is_notice(int status, std::string_view body);

struct HttpAnswer {
  int status = 0;
  std::string body;
};
// One GET with the one HTTP client (core/http_client.hpp), within `timeout`
// to connect and `timeout` for the answer; an answer's body of over 64 KiB is
// refused (no metadata endpoint says that much). kUnavailable when the host
// cannot be resolved or reached in time ("timed out reading": it accepted the
// connection and never answered).
Result<HttpAnswer> http_get(const NoticeUrl& url,
                            const std::vector<std::pair<std::string, std::string>>& headers,
                            std::chrono::milliseconds timeout);

class NoticeWatch {
 public:
  NoticeWatch(std::string file, std::string url,
              std::vector<std::pair<std::string, std::string>> headers,
              std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));
  bool enabled() const { return !file_.empty() || url_.has_value(); }
  // "" while there is no notice; otherwise what gave it, for the log
  // ("notice file PATH", "notice URL U answered 200: BODY"). The URL is only
  // asked when `ask_url` (the caller paces its polls).
  std::string check(bool ask_url = true);

 private:
  std::string file_;
  std::optional<NoticeUrl> url_;
  std::string url_text_;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::chrono::milliseconds timeout_;
  bool failing_ = false;  // the last poll of the URL failed (logged once)
};

}  // namespace hpo::workers
