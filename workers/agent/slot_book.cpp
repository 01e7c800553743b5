#include "workers/agent/slot_book.hpp"

#include <algorithm>

namespace hpo::workers::agent {

SlotBook::SlotBook(int slots, std::vector<trials::GpuDevice> devices)
    : owner_(static_cast<std::size_t>(std::max(1, slots)), -1), devices_(std::move(devices)) {
  for (const auto& d : devices_) room_.push_back(trials::GpuRoom{trials::kWholeShare, d.memory_mb});
}

int SlotBook::free_count() const {
  return static_cast<int>(std::count(owner_.begin(), owner_.end(), -1));
}

bool SlotBook::book(const std::vector<int>& slots, const std::vector<int>& devices,
                    const trials::ResourceRequest& request) {
  if (slots.empty()) return false;
  for (std::size_t k = 0; k < slots.size(); ++k) {
    const int s = slots[k];
    if (s < 0 || s >= size() || owner_[static_cast<std::size_t>(s)] >= 0) return false;
    if (k > 0 && s <= slots[k - 1]) return false;  // ascending, so no slot twice
  }
  Taken took;
  for (std::size_t k = 0; k < devices.size(); ++k) {
    const int d = devices[k];
    if (d < 0 || d >= device_count()) return false;
    if (std::find(devices.begin(), devices.begin() + static_cast<long>(k), d) !=
        devices.begin() + static_cast<long>(k))
      return false;
    const auto& gpu = devices_[static_cast<std::size_t>(d)];
    const trials::GpuRoom want = trials::gpu_take(request, gpu);
    const trials::GpuRoom& have = room_[static_cast<std::size_t>(d)];
    if (have.share < want.share || have.mb < want.mb) return false;
    took.each.push_back(want);
  }
  for (int s : slots) owner_[static_cast<std::size_t>(s)] = slots.front();
  for (std::size_t k = 0; k < devices.size(); ++k) {
    auto& have = room_[static_cast<std::size_t>(devices[k])];
    have.share -= took.each[k].share;
    have.mb -= took.each[k].mb;
  }
  took.devices = devices;
  taken_[slots.front()] = std::move(took);
  return true;
}

void SlotBook::free(const std::vector<int>& slots) {
  if (slots.empty()) return;
  for (int s : slots)
    if (s >= 0 && s < size()) owner_[static_cast<std::size_t>(s)] = -1;
  auto it = taken_.find(slots.front());
  if (it == taken_.end()) return;
  const Taken& took = it->second;
  for (std::size_t k = 0; k < took.devices.size(); ++k) {
    const auto d = static_cast<std::size_t>(took.devices[k]);
    room_[d].share = std::min(trials::kWholeShare, room_[d].share + took.each[k].share);
    room_[d].mb = std::min(devices_[d].memory_mb, room_[d].mb + took.each[k].mb);
  }
  taken_.erase(it);
}

void SlotBook::offer(trials::Offer& o) const {
  o.total_slots = size();
  o.slots = 0;
  o.free.clear();
  for (int i = 0; i < size(); ++i) {
    const bool is_free = owner_[static_cast<std::size_t>(i)] < 0;
    o.slots += is_free;
    if (is_free) o.free.push_back(i);
  }
  o.all_gpus = devices_;
  o.room = room_;
  o.gpus.clear();
  for (std::size_t d = 0; d < devices_.size(); ++d)
    if (room_[d].share >= trials::kWholeShare && room_[d].mb >= devices_[d].memory_mb)
      o.gpus.push_back(devices_[d]);
}

}  // namespace hpo::workers::agent
