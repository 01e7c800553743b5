// Bytes in pieces: an artifact streamed from a trial's folder to the artifact
// directory and back (a checkpoint of gigabytes), through bounded memory.
//
// A ByteSink takes the pieces in order; a producer writes them and stops at
// the first error the sink returns. Whoever owns the sink decides what a
// failed stream leaves (a half-written file is removed, never published).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace hpo {

// The size of the pieces a stream is read and written in.
inline constexpr std::size_t kStreamChunk = std::size_t{1} << 20;

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual Status write(std::string_view bytes) = 0;
};

// Writes the bytes of a stream to the sink it is given (a checkpoint folder
// packed as it is read, a model file copied).
using ByteProducer = std::function<Status(ByteSink&)>;

// The bytes kept in memory, at most `limit` of them: one more is
// kPayloadTooLarge, whose message names `what` and the limit.
class StringSink final : public ByteSink {
 public:
  StringSink(std::int64_t limit, std::string what) : limit_(limit), what_(std::move(what)) {}
  Status write(std::string_view bytes) override;
  std::string& bytes() { return bytes_; }

 private:
  std::int64_t limit_;
  std::string what_;
  std::string bytes_;
};

// Writes to a descriptor it does not own; errors (kInternal) name `what`.
class FdSink final : public ByteSink {
 public:
  FdSink(int fd, std::string what) : fd_(fd), what_(std::move(what)) {}
  Status write(std::string_view bytes) override;
  std::int64_t written() const { return written_; }

 private:
  int fd_;
  std::string what_;
  std::int64_t written_ = 0;
};

// Passes the bytes on to `out`, counting them.
class CountingSink final : public ByteSink {
 public:
  explicit CountingSink(ByteSink& out) : out_(out) {}
  Status write(std::string_view bytes) override {
    count_ += static_cast<std::int64_t>(bytes.size());
    return out_.write(bytes);
  }
  std::int64_t count() const { return count_; }

 private:
  ByteSink& out_;
  std::int64_t count_ = 0;
};

// Passes at most `limit` bytes on to `out`; the write that would pass it
// returns `past` and passes nothing on.
class CappedSink final : public ByteSink {
 public:
  CappedSink(ByteSink& out, std::int64_t limit, Error past)
      : out_(out), limit_(limit), past_(std::move(past)) {}
  Status write(std::string_view bytes) override {
    if (static_cast<std::int64_t>(bytes.size()) > limit_ - count_) return past_;
    count_ += static_cast<std::int64_t>(bytes.size());
    return out_.write(bytes);
  }

 private:
  ByteSink& out_;
  std::int64_t limit_;
  Error past_;
  std::int64_t count_ = 0;
};

// Takes the bytes and keeps none (what a pass-through sink feeds when only
// its count or checksum matters).
class NullSink final : public ByteSink {
 public:
  Status write(std::string_view) override { return {}; }
};

// Writes all of `bytes` to `fd` (EINTR retried); false with errno set.
bool write_all(int fd, std::string_view bytes);

// Reads `fd` from its offset to its end (or `max` bytes, when max >= 0) into
// `sink` in kStreamChunk pieces; the bytes read. A read error is kInternal
// naming `what` (no outage to wait out); a sink's error is returned as it is.
Result<std::int64_t> copy_fd(int fd, ByteSink& sink, const std::string& what,
                             std::int64_t max = -1);

}  // namespace hpo
