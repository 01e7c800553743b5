#include "workers/torch/shm_allreduce.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

namespace hpo::workers::torch_trainer {
namespace {

constexpr std::size_t kLine = 64;  // one arrival counter per cache line

static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

std::atomic<std::uint32_t>* counter(void* base, int rank) {
  return reinterpret_cast<std::atomic<std::uint32_t>*>(static_cast<char*>(base) +
                                                       static_cast<std::size_t>(rank) * kLine);
}

std::size_t header_bytes(int world) {
  return static_cast<std::size_t>(world) * kLine;
}

float* slot(void* base, int world, std::size_t capacity, int i) {
  return reinterpret_cast<float*>(static_cast<char*>(base) + header_bytes(world)) +
         static_cast<std::size_t>(i) * capacity;
}

// Whether `seen` has reached `target` (counters wrap).
bool reached(std::uint32_t seen, std::uint32_t target) {
  return static_cast<std::int32_t>(seen - target) >= 0;
}

long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value, const timespec* t) {
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, value, t, nullptr, 0);
}

}  // namespace

Result<std::unique_ptr<ShmAllreduce>> ShmAllreduce::open(const std::string& path, int rank,
                                                         int world, std::size_t capacity,
                                                         std::chrono::milliseconds timeout) {
  if (world < 1 || rank < 0 || rank >= world || capacity == 0)
    return Error::internal("shm all-reduce: bad rank " + std::to_string(rank) + " of " +
                           std::to_string(world));
  const std::size_t bytes =
      header_bytes(world) + (static_cast<std::size_t>(world) + 1) * capacity * sizeof(float);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return Error::unavailable("shm all-reduce: open " + path + ": " + std::strerror(errno));
  // The same size from every rank: extending a fresh file is idempotent, and it reads as zeros.
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int e = errno;
    ::close(fd);
    return Error::unavailable("shm all-reduce: size " + path + ": " + std::strerror(e));
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  ::close(fd);
  if (base == MAP_FAILED)
    return Error::unavailable("shm all-reduce: map " + path + ": " + std::strerror(e));
  std::unique_ptr<ShmAllreduce> s(new ShmAllreduce());
  s->rank_ = rank;
  s->world_ = world;
  s->capacity_ = capacity;
  s->timeout_ = timeout;
  s->base_ = base;
  s->bytes_ = bytes;
  return s;
}

ShmAllreduce::~ShmAllreduce() {
  if (base_) ::munmap(base_, bytes_);
}

Status ShmAllreduce::barrier() {
  const std::uint32_t target = ++generation_;
  auto* mine = counter(base_, rank_);
  mine->store(target, std::memory_order_release);
  futex(mine, FUTEX_WAKE, INT32_MAX, nullptr);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (int i = 0; i < world_; ++i) {
    if (i == rank_) continue;
    auto* theirs = counter(base_, i);
    for (int spin = 0; !reached(theirs->load(std::memory_order_acquire), target); ++spin) {
      if (spin < 2000) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        continue;
      }
      if (std::chrono::steady_clock::now() > deadline)
        return Error::unavailable("data-parallel: rank " + std::to_string(i) +
                                  " did not reach the all-reduce within " +
                                  std::to_string(timeout_.count()) + " ms");
      const std::uint32_t seen = theirs->load(std::memory_order_acquire);
      if (reached(seen, target)) break;
      const timespec ms{0, 1'000'000};  // re-check the deadline every millisecond
      futex(theirs, FUTEX_WAIT, seen, &ms);
    }
  }
  return {};
}

Status ShmAllreduce::sum(float* data, std::size_t n) {
  for (std::size_t at = 0; at < n; at += capacity_) {
    const std::size_t len = std::min(capacity_, n - at);
    std::memcpy(slot(base_, world_, capacity_, rank_), data + at, len * sizeof(float));
    if (auto st = barrier(); !st) return st;
    const std::size_t lo = len * static_cast<std::size_t>(rank_) / static_cast<std::size_t>(world_);
    const std::size_t hi =
        len * static_cast<std::size_t>(rank_ + 1) / static_cast<std::size_t>(world_);
    float* out = slot(base_, world_, capacity_, world_);
    const float* first = slot(base_, world_, capacity_, 0);
    std::copy(first + lo, first + hi, out + lo);
    for (int i = 1; i < world_; ++i) {
      const float* in = slot(base_, world_, capacity_, i);
      for (std::size_t j = lo; j < hi; ++j) out[j] += in[j];
    }
    if (auto st = barrier(); !st) return st;
    std::memcpy(data + at, out, len * sizeof(float));
  }
  return {};
}

}  // namespace hpo::workers::torch_trainer
