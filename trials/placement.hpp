// Placement: what one attempt of a sweep's trials asks of a worker
// (ResourceRequest, from the trial recipe) and what a worker offers (Offer:
// what it is, and what it has free at the moment it claims).
//
// Placement is decided in one place, the store's claim
// (trials/redis/functions/04_placement.lua): it takes a trial only when its
// request fits the claiming worker's offer, and names the slots the attempt
// takes (Claim::slots), which the worker then books. The rules below are the
// ones it applies; this file states them, and explains in words a request
// that no live worker could ever meet (never_fits, the scheduler's
// schedulability check), with each worker's reason.
//
// Rules:
//  - slots: the attempt takes that many of the worker's slots (how many
//    attempts it runs at once), and its devices (GPUs or MIG instances) apart:
//    a worker's slots and devices are counted separately;
//  - gpus >= 1 (whole): it takes `slots` devices that nothing else holds,
//    each matching gpu_model (a case-insensitive substring of the device
//    name, "A100") and with at least gpu_memory_gb of memory; the lowest
//    such devices first;
//  - 0 < gpus < 1 (a share): it takes that share of one device's compute and
//    gpu_memory_gb of its memory (without gpu_memory_gb, that share of its
//    memory), on the matching device with room for both that is shared the
//    most already; the shares on a device never add up to more than 1 nor
//    their memory to more than the device has, and a device with any share
//    taken serves no whole request. Packed trials share the device's compute
//    without isolation (a MIG instance is a device of its own);
//  - slots a GPU request takes: for each device the slot of the same index
//    when free, then the lowest free ones; any other request the free slots
//    past the devices first, then the highest free ones;
//  - a torch trial on GPUs also needs a CUDA-capable LibTorch on the worker;
//  - torch: the worker runs LibTorch trials (hpo-worker built with LibTorch);
//  - cpus, memory_gb: at most what the worker has not promised to its
//    running trials (a worker that does not count them offers -1: no limit);
//  - labels: "key" needs the worker to carry that label, "key=value" that
//    value.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "trials/trial.hpp"

namespace hpo::trials {

struct TrialRecipe;

struct ResourceRequest {
  int slots = 1;
  double gpus = 0;  // whole devices (1, 2, ...) or a share of one (0 < gpus < 1)
  double gpu_memory_gb = 0;
  std::string gpu_model;
  double cpus = 0;
  double memory_gb = 0;
  bool torch = false;
  std::vector<std::string> labels;  // "key" or "key=value"
  // A data-parallel trial's ranks (data_parallel.replicas) and per_host (0:
  // any split). See "Gangs" below.
  int ranks = 1;
  int per_host = 0;
  // The sweep's project, where the caller knows it (not stored with the
  // request: the claim reads the sweep's own); "": not checked.
  std::string project;
  bool shares_gpu() const { return gpus > 0 && gpus < 1; }
  bool operator==(const ResourceRequest&) const = default;
};

// What a sweep's trials (and its ensemble members) ask of a worker.
ResourceRequest request_for(const TrialRecipe& recipe);

struct GpuDevice {
  std::string model;  // the device name as NVML gives it ("NVIDIA A100-SXM4-80GB")
  std::int64_t memory_mb = 0;
  // How a trial's CUDA_VISIBLE_DEVICES names it: its UUID ("GPU-...", a MIG
  // instance's "MIG-...") as NVML gives it; empty: by its ordinal. Not part of an offer.
  std::string id;
  bool operator==(const GpuDevice&) const = default;
};

// A device's compute is counted in thousandths (a share of 0.25 is 250).
inline constexpr int kWholeShare = 1000;

// What of a device is not promised to running attempts (or what an attempt takes of it).
struct GpuRoom {
  int share = kWholeShare;
  std::int64_t mb = 0;
  bool operator==(const GpuRoom&) const = default;
};

// What an attempt asking `request` takes of device `gpu`: all of it for
// whole GPUs, else its share and gpu_memory_gb (or that share of the memory).
GpuRoom gpu_take(const ResourceRequest& request, const GpuDevice& gpu);

struct Offer {
  // What is free now (a claim subtracts what it takes).
  int slots = 0;
  std::vector<int> free;        // the free slots' indices, ascending (a claim names those it takes)
  std::vector<GpuDevice> gpus;  // the devices nothing holds (derived from room)
  double cpus = -1;             // < 0: not counted
  double memory_gb = -1;        // < 0: not counted
  // What the worker is, idle (a reservation is only made for what could fit).
  int total_slots = 0;
  std::vector<GpuDevice> all_gpus;  // its devices
  std::vector<GpuRoom> room;        // per device: what is not promised now
  double total_cpus = -1;
  double total_memory_gb = -1;
  bool torch = false;
  bool cuda = false;
  std::map<std::string, std::string> labels;  // a label without a value maps to ""
  // The one project whose trials the worker takes (hpo-worker --project); "": every project's.
  std::string project;
};

// An offer of `free` slots (0 .. free-1) and nothing else known (callers of
// the slot-count claim): torch trials allowed, no GPUs, cpus and memory not counted.
Offer slots_only_offer(int free);

// True when a GPU slot can serve the request's GPUs.
bool gpu_matches(const ResourceRequest& request, const GpuDevice& gpu);
// Whether the request fits what the offer has free now, and whether it
// would fit the worker with nothing running (the offer's totals): the
// claim's rules, for the explanations below and the scheduler's checks.
bool fits_now(const ResourceRequest& request, const Offer& offer);
bool fits_idle(const ResourceRequest& request, const Offer& offer);
// "" when the worker could run the request once idle; else why not, naming
// the field ("needs 2 GPU slots matching resources.gpu_model 'A100'; has 1").
std::string never_fits(const ResourceRequest& request, const Offer& offer);

// Gangs: a data-parallel trial (ranks k > 1) runs on one worker when one can
// hold it (slots as above); else, or when per_host m is set, its ranks are
// placed across workers together or not at all: rank 0 on the claiming worker
// (the leader, which holds the lease), the rest on the other live workers
// that fit most ranks, exactly m on each with per_host. Each rank takes one
// slot (and one whole device for a GPU trial: ranks share no device) and its
// 1/k share of cpus and memory_gb.
ResourceRequest rank_request(const ResourceRequest& request);
// How many of the request's ranks the offer could hold once idle.
int ranks_fitting_idle(const ResourceRequest& request, const Offer& offer);
// "" when the workers (idle offers) could run the gang together; else why not.
std::string gang_never_fits(const ResourceRequest& request,
                            const std::vector<std::pair<std::string, Offer>>& workers);

// A gang attempt's layout (Trial::gang): which worker runs which ranks.
struct GangLayout {
  struct Part {
    std::string worker;
    int first = 0;  // its ranks are first .. first + count - 1
    int count = 0;
  };
  int world = 0;
  std::vector<Part> parts;  // the leader's first
};
Result<GangLayout> gang_from_json(std::string_view text);

// A follower's share of a gang, as its claim hands it over (Claims::ranks).
struct RankShare {
  Trial trial;  // id, sweep, number, kind, params, plan, attempt (running)
  int first = 0;
  int count = 0;
  int world = 0;
  std::string leader;          // the worker that holds the trial's lease (and rank 0)
  std::string spec_json;       // the sweep's spec, as in a Claim
  std::vector<int> slots;      // the follower's slots its ranks take (empty: handed out again)
  std::vector<int> devices;    // and its devices, one per rank (GPU trials)
  bool devices_named = false;  // false: an earlier version's claim (slot i owns device i)
};
Result<RankShare> rank_share_from_json(std::string_view text);

// What a registered worker is, idle (WorkerInfo as its heartbeat wrote it).
Offer idle_offer(const WorkerInfo& worker);

// "key=value" / "key" -> (key, value or ""); kInvalidArgument for an empty key
// or characters outside [A-Za-z0-9._/-] in the key, control characters anywhere.
Result<std::pair<std::string, std::string>> parse_label(std::string_view text);

// A claim's placement as the functions write it: "0,2" (slots), then, from
// an offer that has room, "|1,3" (devices). Without the bar the slots own
// the devices of their index (an earlier version's claim): devices_named false.
struct Placed {
  std::vector<int> slots;
  std::vector<int> devices;
  bool devices_named = false;
};
Result<Placed> placed_from_text(std::string_view text);
// The devices an attempt on `placed` uses, on a worker of `device_count` devices.
std::vector<int> devices_of(const Placed& placed, int device_count);

// JSON forms: the request as the store keeps it with the sweep, and the offer
// a claim carries (functions/04_placement.lua reads both).
std::string to_json(const ResourceRequest& request);
Result<ResourceRequest> request_from_json(std::string_view text);
std::string to_json(const Offer& offer);

}  // namespace hpo::trials
