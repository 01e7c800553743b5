#include "web/router.hpp"

#include "web/api_errors.hpp"

namespace hpo::web {

std::vector<std::string> Router::split(const std::string& path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < path.size()) {
    auto slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (slash > start) out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

bool Router::match(const std::vector<std::string>& pattern, const std::vector<std::string>& path,
                   PathParams& params) {
  if (pattern.size() != path.size()) return false;
  PathParams found;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const auto& p = pattern[i];
    if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
      found[p.substr(1, p.size() - 2)] = path[i];
    } else if (p != path[i]) {
      return false;
    }
  }
  params = std::move(found);
  return true;
}

void Router::add(std::string method, std::string pattern, RouteHandler handler) {
  auto segments = split(pattern);
  routes_.push_back(
      {std::move(method), std::move(pattern), std::move(segments), std::move(handler)});
}

Response Router::handle(const Request& request) const {
  auto path = split(request.path);
  std::string allow;
  for (const auto& r : routes_) {
    PathParams params;
    if (!match(r.segments, path, params)) continue;
    if (r.method == request.method) return r.handler(request, params);
    if (allow.find(r.method) == std::string::npos) allow += (allow.empty() ? "" : ", ") + r.method;
  }
  if (!allow.empty()) {
    Response res = error_response(405, HttpError::kMethodNotAllowed,
                                  request.method + " is not allowed on " + request.path);
    res.headers.emplace_back("Allow", allow);
    return res;
  }
  if (fallback_) return fallback_(request);
  return error_response(Error::not_found("no route for " + request.path));
}

std::string Router::pattern_for(const Request& request) const {
  auto path = split(request.path);
  for (const auto& r : routes_) {
    PathParams params;
    if (r.method == request.method && match(r.segments, path, params)) return r.pattern;
  }
  return "";
}

std::vector<RouteInfo> Router::routes() const {
  std::vector<RouteInfo> out;
  for (const auto& r : routes_) out.push_back({r.method, r.pattern});
  return out;
}

}  // namespace hpo::web
