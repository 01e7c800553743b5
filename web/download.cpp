#include "web/download.hpp"

#include <charconv>

#include <fmt/format.h>

#include "trials/artifact_dir.hpp"
#include "web/api_errors.hpp"

namespace hpo::web {
namespace {

std::optional<std::int64_t> number(std::string_view s) {
  std::int64_t v = 0;
  if (s.empty() || std::from_chars(s.data(), s.data() + s.size(), v).ptr != s.data() + s.size() ||
      v < 0)
    return std::nullopt;
  return v;
}

}  // namespace

Result<std::optional<ByteRange>> parse_range(const std::string& header, std::int64_t size) {
  std::string_view h(header);
  while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
  while (!h.empty() && h.back() == ' ') h.remove_suffix(1);
  if (h.empty() || h.substr(0, 6) != "bytes=") return std::optional<ByteRange>{};
  h.remove_prefix(6);
  if (h.find(',') != std::string_view::npos) return std::optional<ByteRange>{};
  const auto dash = h.find('-');
  if (dash == std::string_view::npos)
    return Error::invalid("Range", fmt::format("\"{}\" is not bytes=FIRST-LAST", header));
  const auto first = h.substr(0, dash);
  const auto last = h.substr(dash + 1);
  ByteRange r;
  if (first.empty()) {  // the last n bytes
    auto n = number(last);
    if (!n) return Error::invalid("Range", fmt::format("\"{}\" is not bytes=-COUNT", header));
    if (*n == 0 || size == 0)
      return Error::invalid("Range", fmt::format("\"{}\" asks for none of {} bytes", header, size));
    r.first = std::max<std::int64_t>(0, size - *n);
    r.last = size - 1;
    return std::optional<ByteRange>{r};
  }
  auto a = number(first);
  auto b = last.empty() ? std::optional<std::int64_t>(size - 1) : number(last);
  if (a && *a >= size)
    return Error::invalid("Range",
                          fmt::format("\"{}\" starts past the end of {} bytes", header, size));
  if (!a || !b || *b < *a)
    return Error::invalid("Range", fmt::format("\"{}\" is not bytes=FIRST-LAST", header));
  r.first = *a;
  r.last = std::min(*b, size - 1);
  return std::optional<ByteRange>{r};
}

Response download(const Request& request, trials::ArtifactLocation at) {
  // Bytes kept in Redis (at most 256 MiB) are hashed here; a file's is known.
  if (!at.is_file && at.sha256.empty()) at.sha256 = trials::sha256_hex(at.bytes);
  const std::string etag = at.sha256.empty() ? "" : "\"" + at.sha256 + "\"";
  // If-Range: the range only of the version the client has a part of; any
  // other answer is the whole artifact (RFC 9110 13.1.5).
  const std::string if_range = request.header("if-range");
  const bool same_version = if_range.empty() || (!etag.empty() && if_range == etag);
  auto range = same_version ? parse_range(request.header("range"), at.size)
                            : Result<std::optional<ByteRange>>(std::optional<ByteRange>{});
  if (!range) {
    Response r = error_response(416, HttpError::kRangeNotSatisfiable, range.error().message);
    r.headers.emplace_back("Content-Range", fmt::format("bytes */{}", at.size));
    return r;
  }
  Response r;
  r.status = *range ? 206 : 200;
  r.content_type = "application/octet-stream";
  r.headers.emplace_back("Accept-Ranges", "bytes");
  if (!etag.empty()) {
    r.headers.emplace_back("X-Content-SHA256", at.sha256);
    r.headers.emplace_back("ETag", etag);
  }
  const std::int64_t first = *range ? (*range)->first : 0;
  const std::int64_t length = *range ? (*range)->last - (*range)->first + 1 : at.size;
  if (*range)
    r.headers.emplace_back("Content-Range",
                           fmt::format("bytes {}-{}/{}", first, first + length - 1, at.size));
  if (!at.is_file) {
    r.body = first == 0 && length == at.size ? std::move(at.bytes)
                                             : at.bytes.substr(static_cast<std::size_t>(first),
                                                               static_cast<std::size_t>(length));
    return r;
  }
  // Opened beneath the artifact folder and checked whole by the store
  // (trials/artifact_dir.hpp): served from that descriptor, never by path.
  if (!at.file || !*at.file)
    return error_response(Error::internal("the artifact's file was not opened by the store"));
  const int fd = at.file->release();
  r.file = std::make_shared<FileBody>(fd, first, length);
  return r;
}

}  // namespace hpo::web
