#include "web/static_files.hpp"

#include <fstream>
#include <sstream>

#include "web/api_errors.hpp"

namespace hpo::web {

namespace fs = std::filesystem;

const char* const kContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'";

std::string content_type_for(const fs::path& file) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".ico", "image/x-icon"},
      {".webp", "image/webp"},
      {".woff", "font/woff"},
      {".woff2", "font/woff2"},
      {".txt", "text/plain; charset=utf-8"},
      {".wasm", "application/wasm"},
  };
  const auto ext = ascii_lower(file.extension().string());
  for (const auto& [e, t] : kTypes)
    if (ext == e) return t;
  return "application/octet-stream";
}

StaticFiles::StaticFiles(fs::path root) {
  std::error_code ec;
  root_ = fs::weakly_canonical(root, ec);
  if (ec) root_ = std::move(root);
}

void StaticFiles::add_security_headers(Response& r) {
  r.headers.emplace_back("Content-Security-Policy", kContentSecurityPolicy);
  r.headers.emplace_back("X-Frame-Options", "DENY");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
}

namespace {
bool within(const fs::path& root, const fs::path& p) {
  auto r = root.begin(), q = p.begin();
  for (; r != root.end(); ++r, ++q)
    if (q == p.end() || *r != *q) return false;
  return true;
}

std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

Response StaticFiles::handle(const Request& request) const {
  if (request.method != "GET" && request.method != "HEAD") {
    Response r =
        error_response(405, HttpError::kMethodNotAllowed, request.method + " is not allowed");
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  const std::string& path = request.path;
  if (path.empty() || path[0] != '/' || path.find('\\') != std::string::npos ||
      path.find('\0') != std::string::npos)
    return error_response(400, HttpError::kBadRequest, "bad path");
  fs::path rel;
  std::size_t start = 1;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    std::string seg = path.substr(start, slash - start);
    if (seg == ".." || seg == ".") return error_response(400, HttpError::kBadRequest, "bad path");
    if (!seg.empty()) rel /= seg;
    start = slash + 1;
  }
  std::error_code ec;
  fs::path file = rel.empty() ? root_ / "index.html" : root_ / rel;
  if (fs::is_directory(file, ec)) file /= "index.html";
  bool fallback = false;
  if (!fs::is_regular_file(file, ec)) {
    // Client-side route (no extension): the single-page app's index.html.
    if (rel.has_extension() || path.rfind("/api/", 0) == 0)
      return error_response(Error::not_found("no such file: " + path));
    file = root_ / "index.html";
    fallback = true;
  }
  fs::path real = fs::weakly_canonical(file, ec);
  if (ec || !within(root_, real) || !fs::is_regular_file(real, ec))
    return error_response(Error::not_found("no such file: " + path));
  auto body = read_file(real);
  if (!body) return error_response(Error::not_found("cannot read: " + path));
  Response r = Response::text(200, std::move(*body), content_type_for(real));
  add_security_headers(r);
  // Hashed asset names (Vite) never change; index.html must be revalidated.
  bool html = real.extension() == ".html";
  r.headers.emplace_back("Cache-Control", html || fallback ? "no-cache" : "public, max-age=3600");
  if (request.method == "HEAD") r.body.clear();
  return r;
}

}  // namespace hpo::web
