// `hpo export`'s download_file against a plain HTTP/1.1 server on loopback
// that this test scripts: a connection broken halfway resumes with a Range
// request for the rest of the same version (If-Range); a part left by an
// earlier run of another version starts over; a checksum that does not match
// removes the part and says so.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/download.hpp"
#include "trials/artifact_dir.hpp"

namespace hpo::cli {
namespace {

// A folder of its own for each test, removed at its end.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/hpo-export-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return path + "/" + name; }
};

std::string sha_of(const std::string& bytes) {
  trials::Sha256 s;
  s.update(bytes);
  return s.hex();
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One request: its head, lower-cased header names.
struct Request {
  std::string head;
  std::string header(const std::string& name) const {
    std::istringstream in(head);
    std::string line;
    while (std::getline(in, line)) {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string key = line.substr(0, colon);
      for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (key != name) continue;
      std::string v = line.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ')) v.erase(0, 1);
      while (!v.empty() && (v.back() == '\r' || v.back() == ' ')) v.pop_back();
      return v;
    }
    return "";
  }
};

// Answers each connection's one request with what `answer` returns: the
// response's bytes, sent whole, then the connection is closed (so a response
// cut short is a connection broken halfway).
class ScriptedServer {
 public:
  explicit ScriptedServer(std::function<std::string(const Request&)> answer)
      : answer_(std::move(answer)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    EXPECT_EQ(::listen(fd_, 8), 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<Request> requests() {
    std::lock_guard lk(mu_);
    return requests_;
  }

 private:
  void serve() {
    while (!stop_) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        auto n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        head.append(buf, static_cast<std::size_t>(n));
      }
      Request r{head};
      {
        std::lock_guard lk(mu_);
        requests_.push_back(r);
      }
      const std::string out = answer_(r);
      for (std::size_t sent = 0; sent < out.size();) {
        auto n = ::send(c, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<std::size_t>(n);
      }
      ::shutdown(c, SHUT_RDWR);
      ::close(c);
    }
  }

  std::function<std::string(const Request&)> answer_;
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<Request> requests_;
};

std::string response(int status, const std::string& body, std::int64_t length,
                     const std::string& etag, const std::string& sha,
                     const std::string& extra = "") {
  std::string reason = status == 200 ? "OK" : status == 206 ? "Partial Content" : "Error";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: application/octet-stream\r\nContent-Length: " + std::to_string(length) +
         "\r\nETag: " + etag + "\r\nX-Content-SHA256: " + sha + "\r\n" + extra +
         "Connection: close\r\n\r\n" + body;
}

// The artifact: 3 MiB of a pattern (more than one piece of the stream).
std::string artifact(char salt) {
  std::string a(3 << 20, '\0');
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>((i * 31 + salt) % 251);
  return a;
}

// Serves `bytes` as version `etag`: the first full answer is cut off after
// `cut` bytes of body; a Range request with the same If-Range gets the rest.
std::function<std::string(const Request&)> serve(const std::string& bytes, const std::string& etag,
                                                 std::size_t cut, const std::string& sha) {
  auto cuts = std::make_shared<int>(cut > 0 ? 1 : 0);
  return [=](const Request& r) {
    const std::string range = r.header("range");
    if (!range.empty() && r.header("if-range") == etag) {
      const std::size_t from = std::stoull(range.substr(range.find('=') + 1));
      return response(
          206, bytes.substr(from), static_cast<std::int64_t>(bytes.size() - from), etag, sha,
          "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(bytes.size() - 1) +
              "/" + std::to_string(bytes.size()) + "\r\n");
    }
    if (*cuts > 0) {
      --*cuts;
      return response(200, bytes.substr(0, cut), static_cast<std::int64_t>(bytes.size()), etag,
                      sha);
    }
    return response(200, bytes, static_cast<std::int64_t>(bytes.size()), etag, sha);
  };
}

TEST(ExportDownload, AConnectionBrokenHalfwayResumesWithTheRestOfTheSameVersion) {
  TempDir dir;
  const std::string bytes = artifact(1);
  ScriptedServer server(serve(bytes, "\"v1\"", 1'234'567, sha_of(bytes)));
  HttpClient http("127.0.0.1", server.port());
  const std::filesystem::path out = dir.file("model.pt");
  auto st = download_file(http, "/api/trials/t-0/artifacts/model.pt", out);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(read_file(out), bytes);
  EXPECT_FALSE(std::filesystem::exists(out.string() + ".part"));
  EXPECT_FALSE(std::filesystem::exists(out.string() + ".part.etag"));
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].header("range"), "");
  // The rest only, of the version the first part came from.
  EXPECT_EQ(reqs[1].header("if-range"), "\"v1\"");
  const std::string range = reqs[1].header("range");
  ASSERT_EQ(range.rfind("bytes=", 0), 0u) << range;
  EXPECT_GT(std::stoull(range.substr(6)), 0u);
  EXPECT_LE(std::stoull(range.substr(6)), 1'234'567u);
}

TEST(ExportDownload, APartOfAnotherVersionStartsOver) {
  TempDir dir;
  const std::string bytes = artifact(2);
  const std::filesystem::path out = dir.file("checkpoint");
  // An earlier run left a part of version v0.
  std::ofstream(out.string() + ".part", std::ios::binary) << artifact(9).substr(0, 1000);
  std::ofstream(out.string() + ".part.etag") << "\"v0\"";
  ScriptedServer server(serve(bytes, "\"v1\"", 0, sha_of(bytes)));
  HttpClient http("127.0.0.1", server.port());
  auto st = download_file(http, "/api/trials/t-0/artifacts/checkpoint", out);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(read_file(out), bytes);  // nothing of v0 spliced in
  auto reqs = server.requests();
  ASSERT_GE(reqs.size(), 2u);
  EXPECT_EQ(reqs.front().header("if-range"), "\"v0\"");
  EXPECT_EQ(reqs.back().header("range"), "");
}

TEST(ExportDownload, AChecksumThatDoesNotMatchRemovesThePartAndSaysSo) {
  TempDir dir;
  const std::string bytes = artifact(3);
  const std::string wrong = sha_of("something else");
  ScriptedServer server(serve(bytes, "\"v1\"", 0, wrong));
  HttpClient http("127.0.0.1", server.port());
  const std::filesystem::path out = dir.file("model.pt");
  auto st = download_file(http, "/api/trials/t-0/artifacts/model.pt", out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find(wrong), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("the part is removed"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out.string() + ".part"));
}

}  // namespace
}  // namespace hpo::cli
