// `hpo export`'s downloads: an artifact of any size streamed to a file.
#pragma once

#include <filesystem>
#include <string>

#include "core/http_client.hpp"
#include "core/result.hpp"

namespace hpo::cli {

// GETs `target` into `path` through `path` + ".part": streamed (bounded
// memory), resumed with a Range request after a broken connection (up to
// five tries) or from a part an earlier run left, checked against the
// server's X-Content-SHA256 when it sends one, and renamed into place only
// when whole. An HTTP error is kUnavailable with the server's message;
// a checksum that does not match is kInternal (the part is removed).
Status download_file(HttpClient& http, const std::string& target,
                     const std::filesystem::path& path);

}  // namespace hpo::cli
