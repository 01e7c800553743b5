// Static files for the dashboard: a pure handler over a directory.
//
// The request path is percent-decoded by the server; here a path with a ".."
// or "." segment, a backslash or a NUL is refused outright (400), and the
// resolved file must still lie under the root after symlinks are followed
// (404 otherwise), so no request reads outside the directory. A GET for a path
// that is not a file and has no extension gets index.html (client-side
// routes such as /sweeps/abc). Every response carries a strict
// Content-Security-Policy: the dashboard loads nothing from other origins.
#pragma once

#include <filesystem>
#include <string>

#include "web/http_message.hpp"

namespace hpo::web {

extern const char* const kContentSecurityPolicy;

// "text/html; charset=utf-8" for ".html", ...; "application/octet-stream" if unknown.
std::string content_type_for(const std::filesystem::path& file);

class StaticFiles {
 public:
  explicit StaticFiles(std::filesystem::path root);
  Response handle(const Request& request) const;
  // The security headers every dashboard response gets.
  static void add_security_headers(Response& response);

 private:
  std::filesystem::path root_;  // canonical
};

}  // namespace hpo::web
