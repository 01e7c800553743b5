// SlotBook: which of the worker's slots are free, and which attempt holds the
// others. Not thread-safe: the agent holds its lock around every call.
//
// The book does not choose slots: a claim names the slots it placed each
// attempt on (trials::Claim::slots, decided by the store's claim out of the
// offer this book made), and the book takes exactly those.
#pragma once

#include <vector>

#include "trials/placement.hpp"

namespace hpo::workers::agent {

class SlotBook {
 public:
  // `gpu_slots[i]` is the GPU slot i owns; slots beyond them are CPU slots.
  SlotBook(int slots, std::vector<trials::GpuSlot> gpu_slots);

  // Takes `slots` (a claim's, ascending); false (and nothing taken) when
  // there are none, or one is out of range, repeated or not free.
  bool book(const std::vector<int>& slots);
  void free(const std::vector<int>& slots);

  int size() const { return static_cast<int>(owner_.size()); }
  int free_count() const;
  int busy_count() const { return size() - free_count(); }
  // The slot side of a claim's offer: total_slots, slots, free, all_gpus and gpus.
  void offer(trials::Offer& o) const;

 private:
  int gpu_count() const;

  std::vector<int> owner_;  // per slot: the first slot of the attempt holding it, -1 free
  std::vector<trials::GpuSlot> gpu_slots_;
};

}  // namespace hpo::workers::agent
