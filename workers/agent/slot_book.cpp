#include "workers/agent/slot_book.hpp"

#include <algorithm>

namespace hpo::workers::agent {

SlotBook::SlotBook(int slots, std::vector<trials::GpuSlot> gpu_slots)
    : owner_(static_cast<std::size_t>(std::max(1, slots)), -1), gpu_slots_(std::move(gpu_slots)) {}

int SlotBook::gpu_count() const {
  return std::min(size(), static_cast<int>(gpu_slots_.size()));
}

int SlotBook::free_count() const {
  return static_cast<int>(std::count(owner_.begin(), owner_.end(), -1));
}

bool SlotBook::book(const std::vector<int>& slots) {
  if (slots.empty()) return false;
  for (std::size_t k = 0; k < slots.size(); ++k) {
    const int s = slots[k];
    if (s < 0 || s >= size() || owner_[static_cast<std::size_t>(s)] >= 0) return false;
    if (k > 0 && s <= slots[k - 1]) return false;  // ascending, so no slot twice
  }
  for (int s : slots) owner_[static_cast<std::size_t>(s)] = slots.front();
  return true;
}

void SlotBook::free(const std::vector<int>& slots) {
  for (int s : slots)
    if (s >= 0 && s < size()) owner_[static_cast<std::size_t>(s)] = -1;
}

void SlotBook::offer(trials::Offer& o) const {
  o.total_slots = size();
  o.slots = 0;
  o.free.clear();
  o.gpus.clear();
  o.all_gpus.clear();
  const int n_gpu = gpu_count();
  for (int i = 0; i < size(); ++i) {
    const bool is_free = owner_[static_cast<std::size_t>(i)] < 0;
    o.slots += is_free;
    if (is_free) o.free.push_back(i);
    if (i < n_gpu) {
      o.all_gpus.push_back(gpu_slots_[static_cast<std::size_t>(i)]);
      if (is_free) o.gpus.push_back(gpu_slots_[static_cast<std::size_t>(i)]);
    }
  }
}

}  // namespace hpo::workers::agent
