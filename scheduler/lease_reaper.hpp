// LeaseReaper: re-queues (attempt + 1) or fails trials whose worker stopped
// heartbeating. The work is one atomic store call; this class only paces it.
// A gap of more than max(3 periods, 2 s) since its previous call (Redis down
// or frozen, the scheduler down) counts as an outage: the store then gives
// every running trial a fresh lease instead of expiring any.
#pragma once

#include <chrono>

#include "scheduler/periodic.hpp"

namespace hpo::scheduler {

class LeaseReaper {
 public:
  LeaseReaper(StoreFactory stores, std::chrono::milliseconds period);
  void start() { periodic_.start(); }
  void stop() { periodic_.stop(); }

 private:
  Periodic periodic_;
};

}  // namespace hpo::scheduler
