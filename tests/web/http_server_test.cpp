// HttpServer over real loopback sockets with fake handlers: round trips,
// limits, deadlines, pipelining order, handlers off the io thread, SSE, stop().
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/http_client.hpp"
#include "tests/support/redis_server.hpp"
#include "web/event_hub.hpp"
#include "web/http_server.hpp"
#include "web/static_files.hpp"

namespace hpo::web {
namespace {

using namespace std::chrono_literals;
using testing::RawConnection;
using testing::wait_for;

// A gate a handler waits on until the test opens it (bounded, so a broken
// test cannot hang forever).
class Gate {
 public:
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

Response echo(const Request& r) {
  nlohmann::json j = {{"method", r.method}, {"path", r.path},          {"query", r.query},
                      {"body", r.body},     {"x", r.header("X-Test")}, {"remote", r.remote}};
  return Response::json(200, j.dump());
}

ServerOptions test_options() {
  ServerOptions o;
  o.port = 0;
  o.handler_threads = 4;
  return o;
}

TEST(HttpServer, EchoRoundTripOnAPickedPort) {
  HttpServer server(test_options(), echo);
  ASSERT_TRUE(server.start().ok());
  ASSERT_GT(server.port(), 0);
  HttpClient client("127.0.0.1", server.port());
  auto r = client.request("POST", "/a%20b/c?x=1&y=hello+world", "payload", {{"X-Test", "yes"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->header("content-type"), "application/json");
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["method"], "POST");
  EXPECT_EQ(j["path"], "/a b/c");
  EXPECT_EQ(j["query"]["x"], "1");
  EXPECT_EQ(j["query"]["y"], "hello world");
  EXPECT_EQ(j["body"], "payload");
  EXPECT_EQ(j["x"], "yes");
}

TEST(HttpServer, KeepAliveReusesOneConnection) {
  HttpServer server(test_options(), echo);
  ASSERT_TRUE(server.start().ok());
  HttpClient client("127.0.0.1", server.port());
  std::set<std::string> remotes;
  for (int i = 0; i < 5; ++i) {
    auto r = client.get("/x");
    ASSERT_TRUE(r.ok());
    remotes.insert(nlohmann::json::parse(r->body)["remote"].get<std::string>());
  }
  EXPECT_EQ(remotes.size(), 1u);
}

TEST(HttpServer, BodyOverTheLimitGets413WithJsonError) {
  auto o = test_options();
  o.body_limit = 1024;
  std::atomic<int> calls{0};
  HttpServer server(o, [&](const Request& r) {
    ++calls;
    return echo(r);
  });
  ASSERT_TRUE(server.start().ok());
  HttpClient client("127.0.0.1", server.port());
  auto r = client.post("/api/sweeps", std::string(2 << 20, 'x'));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 413);
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["error"]["code"], "payload_too_large");
  EXPECT_EQ(calls.load(), 0);
  // A body under the limit still works on a new connection.
  auto ok = client.post("/x", std::string(1000, 'y'));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200);
}

TEST(HttpServer, IdleConnectionIsClosedAtTheReadDeadline) {
  auto o = test_options();
  o.read_timeout = 200ms;
  HttpServer server(o, echo);
  ASSERT_TRUE(server.start().ok());
  RawConnection idle(server.port());
  ASSERT_TRUE(idle.connected());
  bool closed = false;
  idle.read_until_closed(10s, closed);  // the deadline is 200 ms: closed long before 10 s
  EXPECT_TRUE(closed);
  EXPECT_TRUE(wait_for([&] { return server.connection_count() == 0; }, 5s));
}

// Past max_connections a new connection gets a 503 with Retry-After at once,
// and is served again once a place is free.
TEST(HttpServer, ConnectionsPastTheCapGet503AndThePlaceComesBack) {
  auto o = test_options();
  o.max_connections = 2;
  HttpServer server(o, echo);
  ASSERT_TRUE(server.start().ok());
  auto a = std::make_unique<RawConnection>(server.port());
  RawConnection b(server.port());
  ASSERT_TRUE(a->connected() && b.connected());
  ASSERT_TRUE(wait_for([&] { return server.connection_count() == 2; }, 5s));
  RawConnection third(server.port());
  ASSERT_TRUE(third.connected());
  bool closed = false;
  const std::string busy = third.read_until_closed(10s, closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(busy.rfind("HTTP/1.1 503", 0), 0u) << busy;
  EXPECT_NE(busy.find("Retry-After: 1"), std::string::npos) << busy;
  EXPECT_NE(busy.find("too many connections"), std::string::npos) << busy;
  a.reset();  // one leaves
  ASSERT_TRUE(wait_for([&] { return server.connection_count() == 1; }, 5s));
  HttpClient client("127.0.0.1", server.port());
  auto r = client.get("/again");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
}

TEST(HttpServer, HalfSentHeadersAreCutOffAtTheDeadline) {
  auto o = test_options();
  o.read_timeout = 200ms;
  HttpServer server(o, echo);
  ASSERT_TRUE(server.start().ok());
  RawConnection slow(server.port());
  ASSERT_TRUE(slow.send("GET / HTTP/1.1\r\nHost: x\r\n"));
  bool closed = false;
  std::string got = slow.read_until_closed(10s, closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(got.find("200 OK"), std::string::npos);
}

TEST(HttpServer, MalformedRequestGets400AndOversizedHeaders431) {
  auto o = test_options();
  o.header_limit = 1024;
  HttpServer server(o, echo);
  ASSERT_TRUE(server.start().ok());
  {
    RawConnection c(server.port());
    ASSERT_TRUE(c.send("THIS IS NOT HTTP\r\n\r\n"));
    bool closed = false;
    std::string got = c.read_until_closed(5s, closed);
    EXPECT_NE(got.find("HTTP/1.1 400"), std::string::npos) << got;
    EXPECT_NE(got.find("\"bad_request\""), std::string::npos);
  }
  {
    RawConnection c(server.port());
    ASSERT_TRUE(
        c.send("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4096, 'a') + "\r\n\r\n"));
    bool closed = false;
    std::string got = c.read_until_closed(5s, closed);
    EXPECT_NE(got.find("HTTP/1.1 431"), std::string::npos) << got;
  }
}

TEST(HttpServer, PipelinedResponsesKeepRequestOrder) {
  // The first request's handler is the slowest; its response must still come first.
  Gate first_may_finish;
  HttpServer server(test_options(), [&](const Request& r) {
    if (r.path == "/1") first_may_finish.wait();
    return Response::text(200, r.path);
  });
  ASSERT_TRUE(server.start().ok());
  RawConnection c(server.port());
  std::string req;
  for (int i = 1; i <= 3; ++i) req += "GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(c.send(req));
  // Requests 2 and 3 are handled, but nothing is written before /1 is done.
  std::string early = c.read_until("/2", 300ms);
  EXPECT_EQ(early.find("/2"), std::string::npos);
  first_may_finish.open();
  std::string got = c.read_until("/3", 10s);
  auto p1 = got.find("\r\n\r\n/1"), p2 = got.find("\r\n\r\n/2"), p3 = got.find("\r\n\r\n/3");
  ASSERT_NE(p1, std::string::npos) << got;
  ASSERT_NE(p2, std::string::npos) << got;
  ASSERT_NE(p3, std::string::npos) << got;
  EXPECT_LT(p1, p2);
  EXPECT_LT(p2, p3);
}

TEST(HttpServer, ABlockedHandlerDoesNotBlockOtherConnections) {
  // One io thread: if handlers ran on it, the second request would wait.
  auto o = test_options();
  o.io_threads = 1;
  Gate gate;
  HttpServer server(o, [&](const Request& r) {
    if (r.path == "/block") gate.wait();
    return Response::text(200, r.path);
  });
  ASSERT_TRUE(server.start().ok());
  auto blocked = std::async(std::launch::async, [&] {
    HttpClient c("127.0.0.1", server.port());
    return c.get("/block");
  });
  HttpClient other("127.0.0.1", server.port(), 5s);
  auto r = other.get("/free");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "/free");
  EXPECT_EQ(blocked.wait_for(0ms), std::future_status::timeout);
  gate.open();
  auto b = blocked.get();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->body, "/block");
}

TEST(HttpServer, HandlerExceptionBecomes500) {
  HttpServer server(test_options(),
                    [](const Request&) -> Response { throw std::runtime_error("boom"); });
  ASSERT_TRUE(server.start().ok());
  HttpClient client("127.0.0.1", server.port());
  auto r = client.get("/");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["code"], "internal");
}

TEST(HttpServer, StopFinishesInFlightRequests) {
  Gate gate;
  std::atomic<bool> entered{false};
  auto server = std::make_unique<HttpServer>(test_options(), [&](const Request& r) {
    entered = true;
    gate.wait();
    return Response::text(200, "done " + r.path);
  });
  ASSERT_TRUE(server->start().ok());
  int port = server->port();
  auto inflight = std::async(std::launch::async, [&] {
    HttpClient c("127.0.0.1", port);
    return c.get("/slow");
  });
  ASSERT_TRUE(wait_for([&] { return entered.load(); }));
  auto stopped = std::async(std::launch::async, [&] { server->stop(); });
  EXPECT_EQ(stopped.wait_for(100ms), std::future_status::timeout);  // waits for /slow
  gate.open();
  auto r = inflight.get();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "done /slow");
  EXPECT_EQ(r->header("connection"), "close");
  EXPECT_EQ(stopped.wait_for(10s), std::future_status::ready);
  // No longer accepting.
  HttpClient late("127.0.0.1", port, 1s);
  EXPECT_FALSE(late.get("/").ok());
}

TEST(HttpServer, BusyPortIsReportedNotThrown) {
  HttpServer first(test_options(), echo);
  ASSERT_TRUE(first.start().ok());
  auto o = test_options();
  o.port = first.port();
  HttpServer second(o, echo);
  auto s = second.start();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
}

TEST(HttpServer, ServerSentEventsFromTheHub) {
  EventHub hub;
  HttpServer server(test_options(), [&](const Request& r) {
    if (r.path != "/events") return Response::text(404, "no");
    Response res;
    res.content_type = "text/event-stream";
    res.body = "retry: 1500\n\n" + format_sse_frame({"1-0", "replayed", "", "{\"n\":0}"});
    res.stream = hub.subscribe();
    res.stream->skip_through("1-0");
    return res;
  });
  ASSERT_TRUE(server.start().ok());
  SseClient sse("127.0.0.1", server.port());
  auto open = sse.open("/events");
  ASSERT_TRUE(open.ok()) << open.error().message;
  EXPECT_EQ(open->status, 200);
  EXPECT_EQ(open->header("content-type"), "text/event-stream");
  auto first = sse.next(5s);
  ASSERT_TRUE(first.ok() && *first);
  EXPECT_EQ((*first)->id, "1-0");
  EXPECT_EQ((*first)->type, "replayed");
  EXPECT_EQ(sse.retry_ms(), 1500);
  ASSERT_TRUE(wait_for([&] { return hub.subscriber_count() == 1; }));
  hub.publish({"1-0", "duplicate", "", "{}"});  // already replayed: skipped
  hub.publish({"2-0", "trial.finished", "s1", "{\"n\":2}"});
  auto second = sse.next(5s);
  ASSERT_TRUE(second.ok() && *second);
  EXPECT_EQ((*second)->id, "2-0");
  EXPECT_EQ((*second)->type, "trial.finished");
  EXPECT_EQ((*second)->data, "{\"n\":2}");
  // Nothing else is pending.
  auto none = sse.next(100ms);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
}

TEST(HttpServer, KeepAliveCommentsFlowAndStopEndsStreams) {
  EventHub hub;
  auto o = test_options();
  o.sse_keepalive = 50ms;
  o.shutdown_timeout = 120s;
  auto server = std::make_unique<HttpServer>(o, [&](const Request&) {
    Response res;
    res.content_type = "text/event-stream";
    res.stream = hub.subscribe();
    return res;
  });
  ASSERT_TRUE(server->start().ok());
  RawConnection c(server->port());
  ASSERT_TRUE(c.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string got = c.read_until(": keepalive", 5s);
  EXPECT_NE(got.find("text/event-stream"), std::string::npos);
  EXPECT_NE(got.find(": keepalive"), std::string::npos);
  // stop() must end the stream itself, not wait for it: with a shutdown
  // timeout far beyond the wait below, only a prompt close passes.
  auto stopped = std::async(std::launch::async, [&] { server->stop(); });
  bool closed = false;
  c.read_until_closed(20s, closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(stopped.wait_for(20s), std::future_status::ready);
}

TEST(HttpServer, StaticFilesRefuseTraversalOverTheWire) {
  namespace fs = std::filesystem;
  fs::path base = fs::temp_directory_path() / ("hpo-web-static-" + std::to_string(::getpid()));
  fs::create_directories(base / "www");
  std::ofstream(base / "www" / "index.html") << "<html>app</html>";
  std::ofstream(base / "secret.txt") << "TOP-SECRET";
  StaticFiles files(base / "www");
  HttpServer server(test_options(), [&](const Request& r) { return files.handle(r); });
  ASSERT_TRUE(server.start().ok());
  for (const char* target : {"/../secret.txt", "/%2e%2e/secret.txt", "/a/../../secret.txt",
                             "/..%2fsecret.txt", "/%2E%2E%2Fsecret.txt", "//../secret.txt"}) {
    RawConnection c(server.port());
    ASSERT_TRUE(
        c.send(std::string("GET ") + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    bool closed = false;
    std::string got = c.read_until_closed(5s, closed);
    EXPECT_EQ(got.find("TOP-SECRET"), std::string::npos) << target;
    EXPECT_EQ(got.find("200 OK"), std::string::npos) << target << "\n" << got;
  }
  HttpClient client("127.0.0.1", server.port());
  auto index = client.get("/sweeps/abc");  // a client-side route
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->body, "<html>app</html>");
  EXPECT_NE(index->header("content-security-policy").find("default-src 'self'"), std::string::npos);
  fs::remove_all(base);
}

// A slow-loris client that keeps making progress (one byte every 20 ms, so
// its request would take seconds) is cut off at the request deadline, not
// kept alive by each byte, and other clients are served meanwhile.
TEST(HttpServer, AClientDrippingOneByteAtATimeIsDroppedWhileOthersAreServed) {
  auto o = test_options();
  o.read_timeout = 300ms;
  HttpServer server(o, echo);
  ASSERT_TRUE(server.start().ok());
  const std::string request =
      "POST /drip HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n" + std::string(200, 'a');
  RawConnection drip(server.port());
  ASSERT_TRUE(drip.connected());
  std::atomic<bool> cut{false};
  std::size_t sent = 0;
  auto dripper = std::async(std::launch::async, [&] {
    for (; sent < request.size(); ++sent) {
      // The wait for the server to close paces the bytes.
      if (!drip.send(request.substr(sent, 1)) || drip.wait_closed(20ms)) {
        cut = true;
        return;
      }
    }
  });
  for (int i = 0; i < 5 && !cut; ++i) {
    HttpClient other("127.0.0.1", server.port(), 5s);
    auto r = other.get("/other");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->status, 200);
  }
  dripper.get();
  EXPECT_TRUE(cut);
  EXPECT_LT(sent, request.size());
  EXPECT_TRUE(wait_for([&] { return server.connection_count() == 0; }, 5s));
}

// Answers with the path; "/block" counts itself in `blocked` and waits for
// `gate` first (requests that hold their handler thread).
Handler blocking_echo(Gate& gate, std::atomic<int>& blocked) {
  return [&gate, &blocked](const Request& r) {
    if (r.path == "/block") {
      ++blocked;
      gate.wait();
    }
    return Response::text(200, r.path);
  };
}

// The handler queue is bounded: with every place taken by requests that are
// still running, the next request gets 503 with Retry-After at once, and is
// served again once they finish.
TEST(HttpServer, RequestsPastTheHandlerQueueGet503WithRetryAfter) {
  auto o = test_options();
  o.handler_threads = 2;
  o.max_queued_requests = 2;
  Gate gate;
  std::atomic<int> blocked{0};
  HttpServer server(o, blocking_echo(gate, blocked));
  ASSERT_TRUE(server.start().ok());
  auto get = [&](std::string path) {
    return std::async(std::launch::async, [&server, path] {
      HttpClient c("127.0.0.1", server.port(), 10s);
      return c.get(path);
    });
  };
  auto a = get("/block");
  auto b = get("/block");
  ASSERT_TRUE(wait_for([&] { return blocked == 2; }, 5s));
  RawConnection third(server.port());
  ASSERT_TRUE(third.send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n"));
  bool closed = false;
  const std::string busy = third.read_until_closed(10s, closed);
  EXPECT_EQ(busy.rfind("HTTP/1.1 503", 0), 0u) << busy;
  EXPECT_NE(busy.find("Retry-After: 1"), std::string::npos) << busy;
  EXPECT_NE(busy.find("busy"), std::string::npos) << busy;
  gate.open();
  ASSERT_TRUE(a.get().ok());
  ASSERT_TRUE(b.get().ok());
  HttpClient again("127.0.0.1", server.port(), 5s);
  auto r = again.get("/x");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
}

// Health probes have their own lane: with every handler busy and the queue
// full (other requests get 503), /healthz is still answered.
TEST(HttpServer, HealthProbesAreAnsweredWhileTheHandlerQueueIsFull) {
  auto o = test_options();
  o.handler_threads = 1;
  o.max_queued_requests = 1;
  Gate gate;
  std::atomic<int> blocked{0};
  HttpServer server(o, blocking_echo(gate, blocked));
  ASSERT_TRUE(server.start().ok());
  auto held = std::async(std::launch::async, [&] {
    HttpClient c("127.0.0.1", server.port(), 10s);
    return c.get("/block");
  });
  ASSERT_TRUE(wait_for([&] { return blocked == 1; }, 5s));
  HttpClient other("127.0.0.1", server.port(), 5s);
  auto busy = other.get("/x");
  ASSERT_TRUE(busy.ok()) << busy.error().message;
  EXPECT_EQ(busy->status, 503);
  HttpClient probe("127.0.0.1", server.port(), 5s);
  for (int i = 0; i < 3; ++i) {
    auto r = probe.get("/healthz");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "/healthz");
  }
  gate.open();
  ASSERT_TRUE(held.get().ok());
}

}  // namespace
}  // namespace hpo::web
