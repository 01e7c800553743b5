// Termination notices (workers/termination_notice.hpp): the metadata URL and
// header syntax, which answers are notices, and a NoticeWatch polling a real
// HTTP server on loopback (GCP-style: the header is required, "FALSE" until
// the host is preempted), one that refuses and one that never answers.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "web/http_server.hpp"
#include "workers/termination_notice.hpp"

namespace hpo::workers {
namespace {

using namespace std::chrono_literals;

TEST(NoticeUrl, TheCloudsEndpointsParseAndOthersAreRefusedByName) {
  auto aws = parse_notice_url("http://169.254.169.254/latest/meta-data/spot/instance-action");
  ASSERT_TRUE(aws.ok()) << aws.error().message;
  EXPECT_EQ(aws->host, "169.254.169.254");
  EXPECT_EQ(aws->port, 80);
  EXPECT_EQ(aws->target, "/latest/meta-data/spot/instance-action");
  auto bare = parse_notice_url("http://metadata.google.internal:8080");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->port, 8080);
  EXPECT_EQ(bare->target, "/");
  auto v6 = parse_notice_url("http://[::1]:9/x");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 9);

  for (const char* bad :
       {"https://169.254.169.254/", "169.254.169.254/x", "http:///x", "http://h:0/",
        "http://h:99999/", "http://h:x/", "http://h:/", "http://[::1/", "http://[::1]x/"}) {
    auto r = parse_notice_url(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  }
}

TEST(NoticeUrl, HeadersAreNameColonValue) {
  auto h = parse_notice_header("Metadata-Flavor: Google");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->first, "Metadata-Flavor");
  EXPECT_EQ(h->second, "Google");
  for (const char* bad : {"Metadata-Flavor", ": Google", "Bad Name: x", "X: a\r\nY: b"}) {
    auto r = parse_notice_header(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("Name: value"), std::string::npos) << r.error().message;
  }
}

TEST(NoticeUrl, OnlyAnAnswerThatSaysTheHostIsGoingIsANotice) {
  EXPECT_FALSE(is_notice(404, ""));                                             // AWS, nothing yet
  EXPECT_TRUE(is_notice(200, R"({"action": "terminate", "time": "t"})"));       // AWS, scheduled
  EXPECT_FALSE(is_notice(200, "FALSE"));                                        // GCP
  EXPECT_TRUE(is_notice(200, "TRUE\n"));                                        // GCP, preempted
  EXPECT_FALSE(is_notice(200, R"({"DocumentIncarnation": 3, "Events": []})"));  // Azure
  EXPECT_TRUE(
      is_notice(200, R"({"DocumentIncarnation": 4, "Events": [{"EventType": "Preempt"}]})"));
  EXPECT_FALSE(is_notice(500, "TRUE"));
  EXPECT_FALSE(is_notice(200, " \n"));
}

TEST(NoticeWatch, AFileIsANoticeOnceItExists) {
  const auto file = std::filesystem::temp_directory_path() / fmt::format("notice-{}", ::getpid());
  std::filesystem::remove(file);
  NoticeWatch w(file.string(), "", {});
  ASSERT_TRUE(w.enabled());
  EXPECT_EQ(w.check(), "");
  std::ofstream(file) << "terminate\n";
  EXPECT_EQ(w.check(), "notice file " + file.string());
  std::filesystem::remove(file);
}

TEST(NoticeWatch, AMetadataServerIsPolledWithItsHeaderUntilItSaysTheHostIsPreempted) {
  std::atomic<bool> preempted{false};
  web::ServerOptions o;
  o.port = 0;
  o.handler_threads = 1;
  web::HttpServer server(o, [&](const web::Request& r) {
    if (r.header("metadata-flavor") != "Google") return web::Response::text(403, "header missing");
    if (r.path != "/computeMetadata/v1/instance/preempted") return web::Response::text(404, "no");
    return web::Response::text(200, preempted ? "TRUE" : "FALSE");
  });
  ASSERT_TRUE(server.start());
  const std::string url =
      fmt::format("http://127.0.0.1:{}/computeMetadata/v1/instance/preempted", server.port());

  auto got = http_get(*parse_notice_url(url), {}, 5s);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->status, 403);
  NoticeWatch without(/*file=*/"", url, {});
  EXPECT_EQ(without.check(), "");

  NoticeWatch w("", url, {{"Metadata-Flavor", "Google"}});
  EXPECT_EQ(w.check(), "");
  EXPECT_EQ(w.check(), "");
  preempted = true;
  EXPECT_EQ(w.check(), "notice URL " + url + " answered 200: TRUE");
  EXPECT_EQ(without.check(), "");  // still refused without the header
}

TEST(NoticeWatch, AnUnreachableOrSilentEndpointIsNoNoticeAndNoHang) {
  // A port nobody listens on: refused.
  int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len);
  const int free_port = ntohs(a.sin_port);
  ::close(probe);
  const std::string refused = fmt::format("http://127.0.0.1:{}/", free_port);
  auto r = http_get(*parse_notice_url(refused), {}, 2s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  NoticeWatch w("", refused, {}, 2s);
  EXPECT_EQ(w.check(), "");

  // A listener that accepts (the kernel does) but never answers: the deadline ends the GET.
  int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  a.sin_port = 0;
  ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(silent, 4), 0);
  len = sizeof a;
  ::getsockname(silent, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string quiet = fmt::format("http://127.0.0.1:{}/", ntohs(a.sin_port));
  auto q = http_get(*parse_notice_url(quiet), {}, 200ms);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.error().message.find("timed out reading"), std::string::npos) << q.error().message;
  NoticeWatch s("", quiet, {}, 200ms);
  EXPECT_EQ(s.check(), "");
  ::close(silent);
}

}  // namespace
}  // namespace hpo::workers
