// RedisStore's artifacts: the scheduler's records (put_record,
// put_sweep_record), a worker's fenced artifact writes, and every read. What
// Redis holds under an artifact key is bytes or, with an artifact folder, a
// reference to a file there (trials/artifact_dir.hpp); this file is where the
// two meet, so that the other files never see a reference.
#include "trials/redis/redis_store.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "trials/artifact_dir.hpp"
#include "trials/artifacts.hpp"
#include "trials/redis/redis_store_codec.hpp"

namespace hpo::trials::redis {

using detail::expect_ok;
using detail::refusal;

Error RedisStore::no_artifact_dir(const std::string& what, const std::string& path) {
  return Error::internal(fmt::format(
      "{} is a file in the pool's artifact directory ({}), and this process was not given "
      "one: start it with --artifacts DIR (where that folder is mounted here)",
      what, path));
}

Result<std::optional<std::string>> RedisStore::resolve(Result<Reply> raw, const std::string& owner,
                                                       const std::string& name, bool of_sweep) {
  if (!raw) return raw.error();
  if (raw->is_error()) return refusal(raw->str);
  if (raw->is_nil()) return std::optional<std::string>{};
  auto stored = decode_stored(std::move(raw->str));
  if (!stored) return stored.error();
  if (!stored->is_file) return std::optional<std::string>{std::move(stored->bytes)};
  // A sweep's records are kept in Redis, always: a reference there was not written by hpo.
  if (of_sweep)
    return Error::internal(fmt::format(
        "record {} of sweep {} does not match what was stored (a file reference where hpo "
        "keeps bytes)",
        name, owner));
  if (!files_) return no_artifact_dir("artifact " + name + " of trial " + owner, stored->path);
  auto bytes = files_->read(owner, name, *stored);
  if (!bytes) return bytes.error();
  return std::optional<std::string>{std::move(*bytes)};
}

Status RedisStore::put_record(const std::string& trial_id, const std::string& name,
                              const std::string& bytes) {
  if (auto st = check_artifact_size(trial_id, name, bytes); !st) return st;
  return expect_ok(fcall("put_record", {trial_id, name, encode_inline(bytes)}));
}

Status RedisStore::check_artifact_size(const std::string& trial_id, const std::string& name,
                                       const std::string& bytes) const {
  if (static_cast<std::int64_t>(bytes.size()) > config_.max_artifact_bytes)
    return Error{ErrorCode::kPayloadTooLarge,
                 fmt::format("artifact {} of {} is {} bytes; the limit is {}", name, trial_id,
                             bytes.size(), config_.max_artifact_bytes),
                 {}};
  return {};
}

Result<std::optional<std::string>> RedisStore::get_artifact(const std::string& trial_id,
                                                            const std::string& name) {
  return resolve(client_.command({"GET", key("artifact:" + trial_id + ":" + name)}), trial_id, name,
                 /*of_sweep=*/false);
}

Status RedisStore::put_sweep_record(const std::string& sweep_id, const std::string& name,
                                    const std::string& bytes) {
  if (auto st = check_artifact_size(sweep_id, name, bytes); !st) return st;
  return expect_ok(fcall("put_sweep_record", {sweep_id, name, encode_inline(bytes)}));
}

Result<std::optional<std::string>> RedisStore::get_sweep_artifact(const std::string& sweep_id,
                                                                  const std::string& name) {
  auto r = client_.pipeline({{"GET", key("sweep_artifact:" + sweep_id + ":" + name)},
                             {"LINDEX", key("trials:" + sweep_id + ":member"), "0"}});
  if (!r) return r.error();
  const Reply& own = (*r)[0];
  const Reply& first_member = (*r)[1];
  if (own.is_error()) return refusal(own.str);
  if (!own.is_nil()) return resolve(own, sweep_id, name, /*of_sweep=*/true);
  // The ensemble's records written before sweeps owned them were kept with
  // the first member (and only those: a member's own files are not the sweep's).
  const bool legacy = name == artifact::kEnsembleRecord || name == artifact::kEnsembleManifest;
  if (!legacy || first_member.is_nil() || first_member.is_error())
    return std::optional<std::string>{};
  return get_artifact(first_member.str, name);
}

Status RedisStore::put_artifact(const std::string& trial_id, int attempt, const std::string& worker,
                                const std::string& name, const std::string& bytes) {
  if (files_)
    return put_file_artifact(trial_id, attempt, worker, name,
                             [&bytes](ByteSink& out) { return out.write(bytes); });
  if (auto st = check_artifact_size(trial_id, name, bytes); !st) return st;
  if (auto st = expect_ok(fcall(
          "put_artifact", {trial_id, std::to_string(attempt), worker, name, encode_inline(bytes)}));
      !st)
    return st;
  return replicated("artifact " + name + " of trial " + trial_id);
}

Status RedisStore::put_artifact_stream(const std::string& trial_id, int attempt,
                                       const std::string& worker, const std::string& name,
                                       const ByteProducer& produce) {
  if (files_) return put_file_artifact(trial_id, attempt, worker, name, produce);
  return TrialQueue::put_artifact_stream(trial_id, attempt, worker, name, produce);
}

std::int64_t RedisStore::inline_artifact_limit() const {
  return files_ ? 0 : config_.max_artifact_bytes;
}

Status RedisStore::put_file_artifact(const std::string& trial_id, int attempt,
                                     const std::string& worker, const std::string& name,
                                     const ByteProducer& produce) {
  // The bytes go to a file first; the fenced call publishes its reference.
  const std::string artifact_key = key("artifact:" + trial_id + ":" + name);
  // Whether the reference stored now names `file` (files are named by their
  // bytes: another attempt's write of the same bytes is the same file).
  auto referenced = [&](const StoredArtifact& file) {
    auto r = client_.command({"GET", artifact_key});
    if (!r || r->is_error() || r->is_nil()) return !r || r->is_error();  // unknown: keep it
    auto d = decode_stored(std::move(r->str));
    return !d || (d->is_file && d->path == file.path);
  };
  // The project's room (its max_file_bytes) bounds the stream itself, so a
  // write past it stops there instead of filling the disk first.
  auto room = file_room(trial_id, attempt, worker, name);
  if (!room) return room.error();
  ByteProducer bounded = produce;
  if (*room >= 0)
    bounded = [&, limit = *room](ByteSink& out) {
      CappedSink capped(out, limit,
                        Error{ErrorCode::kQuotaExceeded,
                              fmt::format("artifact {} of trial {} stopped at {} bytes: its "
                                          "project's max_file_bytes leaves no more room (hpo "
                                          "project list shows what it holds)",
                                          name, trial_id, limit),
                              {}});
      return produce(capped);
    };
  auto reference = files_->write_stream(trial_id, name, bounded);
  if (!reference) return reference.error();
  auto written = decode_stored(*reference);
  auto st = expect_ok(
      fcall("put_artifact", {trial_id, std::to_string(attempt), worker, name, *reference}));
  if (!st) {
    // Refused (a stale attempt, a finished trial): its file is not published
    // unless it is, byte for byte, the one referenced.
    const ErrorCode code = st.error().code;
    const bool refused = code == ErrorCode::kLeaseLost || code == ErrorCode::kNotFound ||
                         code == ErrorCode::kConflict || code == ErrorCode::kInvalidArgument ||
                         code == ErrorCode::kQuotaExceeded;
    if (refused && written && !referenced(*written)) files_->remove(trial_id, name, *written);
    return st;
  }
  // The replaced versions (earlier checkpoints) go only once the new
  // reference is durable: until then a failover or a restore may still point
  // at one. Not when another write took its place meanwhile, and never a
  // file newer than this one (a write in flight).
  if (auto durable = replicated("artifact " + name + " of trial " + trial_id); !durable)
    return durable;
  if (written && referenced(*written)) files_->remove_other_versions(trial_id, name, *written);
  return {};
}

Result<std::int64_t> RedisStore::file_room(const std::string& trial_id, int attempt,
                                           const std::string& worker, const std::string& name) {
  auto r = fcall("artifact_room", {trial_id, std::to_string(attempt), worker, name});
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  if (r->elements.size() != 2) return Error::internal("artifact_room: unexpected reply");
  return detail::to_i64(r->elements[1].str);
}

Result<std::optional<StoredArtifact>> RedisStore::stored_artifact(const std::string& trial_id,
                                                                  const std::string& name) {
  auto r = client_.command({"GET", key("artifact:" + trial_id + ":" + name)});
  if (!r) return r.error();
  if (r->is_error()) return refusal(r->str);
  if (r->is_nil()) return std::optional<StoredArtifact>{};
  auto stored = decode_stored(std::move(r->str));
  if (!stored) return stored.error();
  if (stored->is_file && !files_)
    return no_artifact_dir("artifact " + name + " of trial " + trial_id, stored->path);
  return std::optional<StoredArtifact>{std::move(*stored)};
}

Result<bool> RedisStore::read_artifact(const std::string& trial_id, const std::string& name,
                                       ByteSink& out) {
  auto stored = stored_artifact(trial_id, name);
  if (!stored) return stored.error();
  if (!*stored) return false;
  const StoredArtifact& a = **stored;
  if (auto st = a.is_file ? files_->read_stream(trial_id, name, a, out) : out.write(a.bytes); !st)
    return st.error();
  return true;
}

Result<std::optional<ArtifactLocation>> RedisStore::locate_artifact(const std::string& trial_id,
                                                                    const std::string& name) {
  auto stored = stored_artifact(trial_id, name);
  if (!stored) return stored.error();
  if (!*stored) return std::optional<ArtifactLocation>{};
  StoredArtifact& a = **stored;
  ArtifactLocation at;
  at.is_file = a.is_file;
  if (a.is_file) {
    // Opened and checked here, served from this descriptor: never reopened by path.
    auto fd = files_->open_stored(trial_id, name, a);
    if (!fd) return fd.error();
    at.file = std::make_shared<UniqueFd>(std::move(*fd));
    at.path = files_->path_for(trial_id, name, a.sha256);
    at.size = a.size;
    at.sha256 = a.sha256;
  } else {
    at.size = static_cast<std::int64_t>(a.bytes.size());
    at.bytes = std::move(a.bytes);
  }
  return std::optional<ArtifactLocation>{std::move(at)};
}

Result<std::optional<std::int64_t>> RedisStore::artifact_size(const std::string& trial_id,
                                                              const std::string& name) {
  // A reference is small, so a large value is bytes: its length is the size,
  // without reading it (within the escape's few bytes).
  const std::string k = key("artifact:" + trial_id + ":" + name);
  auto len = client_.command({"STRLEN", k});
  if (!len) return len.error();
  if (len->is_error()) return refusal(len->str);
  if (len->integer == 0) return std::optional<std::int64_t>{};
  if (len->integer > 4096) return std::optional<std::int64_t>{len->integer};
  auto stored = stored_artifact(trial_id, name);
  if (!stored) return stored.error();
  if (!*stored) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>{
      (*stored)->is_file ? (*stored)->size : static_cast<std::int64_t>((*stored)->bytes.size())};
}

Result<bool> RedisStore::read_artifact_range(const std::string& trial_id, const std::string& name,
                                             std::int64_t offset, std::int64_t size, char* out) {
  const std::string what = "artifact " + name + " of trial " + trial_id;
  const std::string k = key("artifact:" + trial_id + ":" + name);
  // A large value is bytes (a reference is small): only the range is read.
  auto r = client_.pipeline(
      {{"STRLEN", k}, {"GETRANGE", k, "0", std::to_string(kStoredPrefixBytes - 1)}});
  if (!r) return r.error();
  const Reply& len = (*r)[0];
  if (len.is_error()) return refusal(len.str);
  if (len.integer == 0) return false;
  if (len.integer <= 4096) {
    auto stored = stored_artifact(trial_id, name);
    if (!stored) return stored.error();
    if (!*stored) return false;
    const StoredArtifact& a = **stored;
    if (a.is_file) {
      if (!files_)
        return Error::internal(what + " is a file, and this process has no artifact folder");
      if (auto st = files_->read_range(trial_id, name, a, offset, size, out); !st)
        return st.error();
      return true;
    }
    if (auto st = copy_range(a.bytes, offset, size, what, out); !st) return st.error();
    return true;
  }
  const auto skip = static_cast<std::int64_t>(inline_escape_length((*r)[1].str));
  if (auto st = check_range(offset, size, len.integer - skip, what); !st) return st.error();
  if (size == 0) return true;
  auto got = client_.command(
      {"GETRANGE", k, std::to_string(skip + offset), std::to_string(skip + offset + size - 1)});
  if (!got) return got.error();
  if (got->is_error()) return refusal(got->str);
  if (static_cast<std::int64_t>(got->str.size()) != size)  // replaced meanwhile
    return Error::unavailable(what + " changed while it was read");
  std::memcpy(out, got->str.data(), static_cast<std::size_t>(size));
  return true;
}

}  // namespace hpo::trials::redis
