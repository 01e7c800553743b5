// Which of a worker's slots an attempt takes: the one rule the store's
// offer arithmetic (placement.hpp, take()) and the worker's slot book
// (workers/agent/slot_book.hpp) both follow, so the slots a claim counted are
// the slots the worker then takes.
#pragma once

#include <vector>

#include "trials/placement.hpp"

namespace hpo::trials {

// `free[i]`: slot i is free; `gpus[i]`: the GPU slot i owns (slots past
// gpus.size() are CPU slots). A GPU request takes the lowest free slots whose
// GPU matches it; any other the free CPU slots first, then the highest free
// GPU slots. max(1, request.slots) slots, lowest first; empty when they are
// not free.
std::vector<int> pick_slots(const ResourceRequest& request, const std::vector<bool>& free,
                            const std::vector<GpuSlot>& gpus);

}  // namespace hpo::trials
