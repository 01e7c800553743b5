// A download of an artifact: whole, or the one byte range a client asks for
// (RFC 9110 "Range: bytes=a-b", "bytes=a-", "bytes=-n"), so that an
// interrupted download of gigabytes goes on where it stopped. A file of the
// artifact directory is streamed from disk (web/http_message.hpp, FileBody),
// never read whole. Every answer says `Accept-Ranges: bytes` and carries the
// SHA-256 of the whole artifact (`X-Content-SHA256`, and as the ETag) when
// the store knows it, so that a client can check what it put together.
// With `If-Range: ETAG` the range is served only while the artifact is still
// that version (else the whole of the new one).
#pragma once

#include <optional>
#include <string>

#include "trials/store.hpp"
#include "web/http_message.hpp"

namespace hpo::web {

// The byte range [first, last] of a `size`-byte body that a Range header
// asks for: nullopt for no header, a header of another unit or several
// ranges (the whole body is sent); kInvalidArgument when it cannot be
// satisfied (answered 416).
struct ByteRange {
  std::int64_t first = 0;
  std::int64_t last = 0;
};
Result<std::optional<ByteRange>> parse_range(const std::string& header, std::int64_t size);

// 200 with the whole body, 206 with one range, 416 with `Content-Range:
// bytes */size`. A file's bytes come from the descriptor the store opened
// and checked (ArtifactLocation::file); a file that is not what was stored
// never reaches here (the store's 500 names the artifact, not the file).
Response download(const Request& request, trials::ArtifactLocation at);

}  // namespace hpo::web
