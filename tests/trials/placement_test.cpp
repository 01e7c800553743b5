// Placement rules (trials/placement.hpp): what fits an offer now, why a worker
// can never run a request, and the JSON forms the store's claim reads. Which
// slots a claim takes, and what it leaves of the offer, is the claim's own
// decision: redis_store_test.cpp, AClaimNamesTheSlots*.
#include "trials/placement.hpp"

#include <gtest/gtest.h>

#include "trials/spec/spec.hpp"
#include "trials/trial.hpp"

namespace hpo::trials {
namespace {

Offer gpu_worker(std::vector<GpuDevice> gpus, int cpu_slots = 0) {
  Offer o;
  o.slots = o.total_slots = static_cast<int>(gpus.size()) + cpu_slots;
  o.gpus = o.all_gpus = std::move(gpus);
  o.torch = true;
  o.cuda = true;
  o.cpus = o.total_cpus = 16;
  o.memory_gb = o.total_memory_gb = 64;
  return o;
}

const GpuDevice kA100{"NVIDIA A100-SXM4-80GB", 81920};
const GpuDevice kT4{"Tesla T4", 15360};

TEST(Placement, GpuRequestsMatchModelAndMemory) {
  ResourceRequest r;
  r.slots = r.gpus = 1;
  r.gpu_model = "a100";
  EXPECT_TRUE(gpu_matches(r, kA100));  // a substring, whatever the case
  EXPECT_FALSE(gpu_matches(r, kT4));
  r.gpu_model.clear();
  r.gpu_memory_gb = 40;
  EXPECT_TRUE(gpu_matches(r, kA100));
  EXPECT_FALSE(gpu_matches(r, kT4));
  EXPECT_FALSE(fits_now(r, gpu_worker({kT4, kT4})));
  EXPECT_TRUE(fits_now(r, gpu_worker({kT4, kA100})));
  EXPECT_FALSE(fits_now(r, gpu_worker({}, 4)));  // CPU slots serve no GPU request
}

TEST(Placement, CoresMemoryTorchAndLabels) {
  Offer o = gpu_worker({}, 4);
  o.labels = {{"zone", "a"}, {"fast-disk", ""}};
  ResourceRequest r;
  r.cpus = 17;
  EXPECT_FALSE(fits_now(r, o));
  EXPECT_NE(never_fits(r, o).find("needs 17 cpus (resources.cpus), the worker has 16"),
            std::string::npos)
      << never_fits(r, o);
  r.cpus = 8;
  EXPECT_TRUE(fits_now(r, o));
  o.cpus = 4;  // 12 of 16 promised to running trials
  EXPECT_FALSE(fits_now(r, o));
  EXPECT_TRUE(fits_idle(r, o));
  EXPECT_EQ(never_fits(r, o), "");
  r = {};
  r.labels = {"zone=a", "fast-disk"};
  EXPECT_TRUE(fits_now(r, o));
  r.labels = {"zone=b"};
  EXPECT_FALSE(fits_now(r, o));
  EXPECT_NE(
      never_fits(r, o).find("needs label 'zone=b' (resources.labels), the worker has 'zone=a'"),
      std::string::npos)
      << never_fits(r, o);
  r.labels = {"ssd"};
  EXPECT_NE(never_fits(r, o).find("has no 'ssd'"), std::string::npos);
  r = {};
  r.torch = true;
  o.torch = false;
  EXPECT_FALSE(fits_now(r, o));
  EXPECT_NE(never_fits(r, o).find("runs no torch trials"), std::string::npos);
  o.torch = true;
  EXPECT_TRUE(fits_now(r, o));
  r.gpus = 1;
  o = gpu_worker({kA100});
  o.cuda = false;  // a GPU host whose LibTorch is CPU-only
  EXPECT_FALSE(fits_now(r, o));
  EXPECT_NE(never_fits(r, o).find("no CUDA LibTorch"), std::string::npos);
  // Counting off (< 0) means no limit.
  r = {};
  r.cpus = 1000;
  r.memory_gb = 1000;
  EXPECT_TRUE(fits_now(r, slots_only_offer(1)));
}

TEST(Placement, NeverFitsNamesTheGpusWanted) {
  ResourceRequest r;
  r.slots = r.gpus = 2;
  r.gpu_model = "A100";
  r.gpu_memory_gb = 40;
  const std::string why = never_fits(r, gpu_worker({kA100, kT4}));
  EXPECT_NE(why.find("2 whole GPUs of model 'A100' (resources.gpu_model) with at least 40 GB"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("Tesla T4 15 GB"), std::string::npos) << why;
  EXPECT_EQ(never_fits(r, gpu_worker({kA100, kA100})), "");
}

TEST(Placement, RequestFromTheRecipe) {
  auto spec = parse_spec(R"({"name": "p", "objective": {"metric": "loss", "mode": "min"},
    "parameters": {"x": {"type": "float", "min": 0, "max": 1}},
    "search": {"algorithm": "random", "max_trials": 1},
    "trial": {"kind": "torch", "data": {"format": "csv", "train": "t.csv", "target": "y"},
              "data_parallel": {"replicas": 2},
              "resources": {"gpus": 1, "gpu_model": "H100", "cpus": 3, "memory_gb": 8,
                            "labels": ["zone=a"]}}})");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ResourceRequest r = request_for(spec->trial);
  EXPECT_EQ(r.slots, 2);
  EXPECT_EQ(r.gpus, 1);
  EXPECT_EQ(r.gpu_model, "H100");
  EXPECT_TRUE(r.torch);
  EXPECT_DOUBLE_EQ(r.cpus, 3);
  EXPECT_DOUBLE_EQ(r.memory_gb, 8);
  EXPECT_EQ(r.labels, std::vector<std::string>{"zone=a"});
  auto back = request_from_json(to_json(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->gpu_model, "h100");  // kept lower-case for the store's match
  back->gpu_model = r.gpu_model;
  EXPECT_EQ(*back, r);
  EXPECT_FALSE(request_from_json("[1]").ok());
  EXPECT_FALSE(request_from_json(R"({"labels": [1]})").ok());
}

TEST(Placement, LabelsParseAsKeyOrKeyValue) {
  auto kv = parse_label("zone=eu-west/1a");
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->first, "zone");
  EXPECT_EQ(kv->second, "eu-west/1a");
  auto flag = parse_label("fast-disk");
  ASSERT_TRUE(flag.ok());
  EXPECT_EQ(flag->second, "");
  EXPECT_FALSE(parse_label("").ok());
  EXPECT_FALSE(parse_label("=a").ok());
  EXPECT_FALSE(parse_label("bad key=1").ok());
  EXPECT_FALSE(parse_label("k=line\nbreak").ok());
}

TEST(Placement, AWorkerEntryIsItsIdleOffer) {
  WorkerInfo w;
  w.name = "g";
  w.slots = 3;
  w.gpus = {GpuInfo{0, kA100.model, kA100.memory_mb, 0, 0}};
  w.torch = true;
  w.cpus = 8;
  w.labels = {{"zone", "a"}};
  Offer o = idle_offer(w);
  EXPECT_EQ(o.total_slots, 3);
  EXPECT_EQ(o.all_gpus, std::vector<GpuDevice>{kA100});
  EXPECT_DOUBLE_EQ(o.total_cpus, 8);
  EXPECT_LT(o.total_memory_gb, 0);  // not counted
  EXPECT_TRUE(o.torch);
  EXPECT_FALSE(o.cuda);
  EXPECT_EQ(o.labels.at("zone"), "a");
}

}  // namespace
}  // namespace hpo::trials
