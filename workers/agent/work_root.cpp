#include "workers/agent/work_root.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "core/log.hpp"
#include "workers/agent/attempt.hpp"

namespace hpo::workers::agent {
namespace {

namespace fs = std::filesystem;
constexpr char kWorkLockName[] = ".hpo-worker.lock";

std::string safe_dir_name(std::string s) {
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  return s;
}

// Removes the attempt directories ("<trial>-a<attempt>") in `root`; returns
// how many entries went.
std::size_t remove_attempt_dirs(const fs::path& root) {
  static const std::regex kAttemptDir(R"(.+-a[0-9]+)");
  std::error_code ec;
  std::size_t n = 0;
  for (const auto& entry : fs::directory_iterator(root, ec))
    if (entry.is_directory(ec) && std::regex_match(entry.path().filename().string(), kAttemptDir))
      n += fs::remove_all(entry.path(), ec) > 0;
  return n;
}

}  // namespace

WorkRoot::WorkRoot(std::string root, std::string worker)
    : root_(std::move(root)), worker_(std::move(worker)) {}

WorkRoot::~WorkRoot() {
  unlock();
}

void WorkRoot::unlock() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
  lock_fd_ = -1;
}

Status WorkRoot::claim() {
  if (root_.empty() || lock_fd_ >= 0) return {};
  std::error_code ec;
  const fs::path root(root_);
  fs::create_directories(root, ec);
  int fd = ::open((root / kWorkLockName).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (fd >= 0) ::close(fd);
    return Error::conflict(fmt::format(
        "the work directory {} is locked by another live worker: is --name ({}) unique on this "
        "host?",
        root.string(), worker_));
  }
  lock_fd_ = fd;
  remove_attempt_dirs(root);  // what a previous run under this name left behind
  // Siblings with our lock file whose lock is free belong to dead workers.
  for (const auto& entry : fs::directory_iterator(root.parent_path(), ec)) {
    if (!entry.is_directory(ec) || entry.path() == root) continue;
    const fs::path lock = entry.path() / kWorkLockName;
    if (!fs::exists(lock, ec)) continue;  // not a worker's: never ours to touch
    int other = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
    if (other < 0) continue;
    const bool dead = ::flock(other, LOCK_EX | LOCK_NB) == 0;
    ::close(other);
    if (!dead) continue;
    auto removed = remove_attempt_dirs(entry.path());
    fs::remove(lock, ec);
    fs::remove(entry.path(), ec);  // only when nothing else is left in it
    log_info("removed a dead worker's attempt directories", {{"worker", worker_},
                                                             {"dir", entry.path().string()},
                                                             {"entries", std::to_string(removed)}});
  }
  return {};
}

std::string WorkRoot::make_attempt_dir(const trials::Trial& trial) const {
  if (root_.empty()) return "";
  std::string dir =
      (fs::path(root_) / safe_dir_name(fmt::format("{}-a{}", trial.id, trial.attempt))).string();
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (!ec) return dir;
  log_warn("cannot create the work dir",
           trial_fields(trial, worker_, {{"dir", dir}, {"error", ec.message()}}));
  return "";
}

void WorkRoot::remove(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace hpo::workers::agent
