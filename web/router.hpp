// Router: a pure function from (method, path) to a handler, with path
// parameters. Patterns are OpenAPI-style ("/api/sweeps/{id}"): a `{name}`
// segment matches one non-empty path segment. No I/O, no threads: unit-tested
// without a socket. A path that matches no pattern is a 404; one that matches
// a pattern under another method is a 405 with an Allow header.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "web/http_message.hpp"

namespace hpo::web {

using PathParams = std::map<std::string, std::string>;
using RouteHandler = std::function<Response(const Request&, const PathParams&)>;

struct RouteInfo {
  std::string method;
  std::string pattern;
};

class Router {
 public:
  void add(std::string method, std::string pattern, RouteHandler handler);
  // Requests that match no route go here instead of the 404 (static files).
  void set_fallback(Handler fallback) { fallback_ = std::move(fallback); }

  Response handle(const Request& request) const;
  std::vector<RouteInfo> routes() const;
  // The pattern of the route `request` matches ("" when none): a metrics label.
  std::string pattern_for(const Request& request) const;

  // Exposed for tests: does `path` match `pattern`, and with which parameters?
  static bool match(const std::vector<std::string>& pattern, const std::vector<std::string>& path,
                    PathParams& params);
  static std::vector<std::string> split(const std::string& path);

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    RouteHandler handler;
  };
  std::vector<Route> routes_;
  Handler fallback_;
};

}  // namespace hpo::web
