// SlotBook: which of the worker's slots are free, and which attempt holds the
// others. Not thread-safe: the agent holds its lock around every call.
//
// Slots are taken by the rule the store's claim counted them with
// (trials/slot_choice.hpp): a GPU request the lowest free GPU slots that match
// it; any other the slots without a GPU first, then the highest free GPU slots.
#pragma once

#include <vector>

#include "trials/placement.hpp"

namespace hpo::workers::agent {

class SlotBook {
 public:
  // `gpu_slots[i]` is the GPU slot i owns; slots beyond them are CPU slots.
  SlotBook(int slots, std::vector<trials::GpuSlot> gpu_slots);

  // Takes request.slots (at least one) free slots into `out`, lowest first;
  // false (and nothing taken) when they are not free.
  bool reserve(const trials::ResourceRequest& request, std::vector<int>& out);
  void free(const std::vector<int>& slots);

  int size() const { return static_cast<int>(owner_.size()); }
  int free_count() const;
  int busy_count() const { return size() - free_count(); }
  // The slot side of a claim's offer: total_slots, slots, all_gpus and gpus.
  void offer(trials::Offer& o) const;

 private:
  int gpu_count() const;

  std::vector<int> owner_;  // per slot: the first slot of the attempt holding it, -1 free
  std::vector<trials::GpuSlot> gpu_slots_;
};

}  // namespace hpo::workers::agent
