#include "core/byte_stream.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

namespace hpo {

Status StringSink::write(std::string_view bytes) {
  if (static_cast<std::int64_t>(bytes_.size() + bytes.size()) > limit_)
    return Error{ErrorCode::kPayloadTooLarge,
                 fmt::format("{} is larger than {} bytes ({} MiB), the most it may have", what_,
                             limit_, limit_ >> 20),
                 {}};
  bytes_.append(bytes);
  return {};
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

Status FdSink::write(std::string_view bytes) {
  if (!write_all(fd_, bytes))
    return Error::internal(fmt::format("cannot write {}: {}", what_, std::strerror(errno)));
  written_ += static_cast<std::int64_t>(bytes.size());
  return {};
}

Result<std::int64_t> copy_fd(int fd, ByteSink& sink, const std::string& what, std::int64_t max) {
  const auto buffer = std::make_unique<char[]>(kStreamChunk);
  std::int64_t total = 0;
  while (max < 0 || total < max) {
    std::size_t want = kStreamChunk;
    if (max >= 0) want = static_cast<std::size_t>(std::min<std::int64_t>(max - total, want));
    const ssize_t n = ::read(fd, buffer.get(), want);
    if (n < 0 && errno == EINTR) continue;
    // Not kUnavailable: a read that fails is no outage to wait out.
    if (n < 0)
      return Error::internal(fmt::format("cannot read {}: {}", what, std::strerror(errno)));
    if (n == 0) break;
    if (auto st = sink.write(std::string_view(buffer.get(), static_cast<std::size_t>(n))); !st)
      return st.error();
    total += n;
  }
  return total;
}

}  // namespace hpo
