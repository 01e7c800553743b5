#include "web/static_files.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace hpo::web {
namespace {

namespace fs = std::filesystem;

class StaticFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() /
            ("hpo-static-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(base_ / "www" / "assets");
    std::ofstream(base_ / "www" / "index.html") << "<html>index</html>";
    std::ofstream(base_ / "www" / "assets" / "app-1234.js") << "console.log(1)";
    std::ofstream(base_ / "www" / "assets" / "style.css") << "body{}";
    std::ofstream(base_ / "secret.txt") << "TOP-SECRET";
    fs::create_symlink(base_ / "secret.txt", base_ / "www" / "link.txt");
  }
  void TearDown() override { fs::remove_all(base_); }
  Response get(const std::string& path) {
    Request r;
    r.method = "GET";
    r.path = path;
    return StaticFiles(base_ / "www").handle(r);
  }
  fs::path base_;
};

TEST_F(StaticFilesTest, ServesFilesWithContentTypes) {
  auto js = get("/assets/app-1234.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.body, "console.log(1)");
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(get("/assets/style.css").content_type, "text/css; charset=utf-8");
  auto root = get("/");
  EXPECT_EQ(root.body, "<html>index</html>");
  EXPECT_EQ(root.content_type, "text/html; charset=utf-8");
}

TEST_F(StaticFilesTest, EveryResponseHasAStrictPolicy) {
  auto r = get("/");
  EXPECT_NE(r.header("Content-Security-Policy").find("default-src 'self'"), std::string::npos);
  EXPECT_NE(r.header("Content-Security-Policy").find("object-src 'none'"), std::string::npos);
  EXPECT_EQ(r.header("X-Frame-Options"), "DENY");
}

TEST_F(StaticFilesTest, ClientRoutesFallBackToIndex) {
  auto r = get("/sweeps/abc-123");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "<html>index</html>");
  EXPECT_EQ(get("/assets/missing.js").status, 404);  // a missing asset is not the app
}

TEST_F(StaticFilesTest, RefusesTraversal) {
  for (const char* p : {"/../secret.txt", "/assets/../../secret.txt", "/./index.html", "/assets/..",
                        "/..\\secret.txt"}) {
    auto r = get(p);
    EXPECT_NE(r.status, 200) << p;
    EXPECT_EQ(r.body.find("TOP-SECRET"), std::string::npos) << p;
  }
}

TEST_F(StaticFilesTest, RefusesSymlinksThatLeaveTheRoot) {
  auto r = get("/link.txt");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body.find("TOP-SECRET"), std::string::npos);
}

TEST_F(StaticFilesTest, OnlyReads) {
  Request r;
  r.method = "POST";
  r.path = "/index.html";
  EXPECT_EQ(StaticFiles(base_ / "www").handle(r).status, 405);
}

}  // namespace
}  // namespace hpo::web
