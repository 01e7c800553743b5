// SlotBook: which of the worker's slots are free and what of each device is
// promised, and which attempt holds them. Not thread-safe: the agent holds
// its lock around every call.
//
// The book does not choose: a claim names the slots and devices it placed
// each attempt on (trials::Claim, decided by the store's claim out of the
// offer this book made), and the book takes exactly those, what the
// attempt's request takes of each device (trials::gpu_take) included. It
// never promises more of a device than the device has.
#pragma once

#include <map>
#include <vector>

#include "trials/placement.hpp"

namespace hpo::workers::agent {

class SlotBook {
 public:
  // `devices`: the GPUs (or MIG instances) the slots' attempts share.
  SlotBook(int slots, std::vector<trials::GpuDevice> devices);

  // Takes `slots` (a claim's, ascending) and `devices` for an attempt asking
  // `request`; false (and nothing taken) when there are no slots, or one is
  // out of range, repeated or not free, or a device is out of range or has
  // not the room the request takes of it.
  bool book(const std::vector<int>& slots, const std::vector<int>& devices,
            const trials::ResourceRequest& request);
  // Frees the slots of an attempt and what it took of its devices.
  void free(const std::vector<int>& slots);

  int size() const { return static_cast<int>(owner_.size()); }
  int free_count() const;
  int busy_count() const { return size() - free_count(); }
  int device_count() const { return static_cast<int>(devices_.size()); }
  // The slot and device side of a claim's offer: total_slots, slots, free,
  // all_gpus, room and gpus.
  void offer(trials::Offer& o) const;

 private:
  struct Taken {
    std::vector<int> devices;
    std::vector<trials::GpuRoom> each;  // what it took of each of them
  };

  std::vector<int> owner_;  // per slot: the first slot of the attempt holding it, -1 free
  std::vector<trials::GpuDevice> devices_;
  std::vector<trials::GpuRoom> room_;  // per device: what is not promised
  std::map<int, Taken> taken_;         // by the attempt's first slot
};

}  // namespace hpo::workers::agent
