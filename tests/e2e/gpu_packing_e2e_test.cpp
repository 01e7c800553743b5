// GPUs shared by trials, through the real hpo-scheduler and hpo-worker, on
// the stand-in NVML (tests/support/fake_nvml.cpp, a file this test writes):
// the worker offers a whole H100 and the two MIG instances of an A100 as
// three devices (a MIG instance by its UUID); four trials of gpus 0.25 run
// together on the H100 and a fifth waits for one of them; three 30 GB
// requests on it run two at a time; a trial asking
// for the 2g.20gb instance sees it, and only it, in CUDA_VISIBLE_DEVICES;
// the workers API carries each device's use as NVML reports it; each trial's
// GPU memory and utilisation (its processes' on a shared device, the
// device's when it holds it alone) come back as its gpu.* metrics, in the
// API and in the CSV. Confined (workers/trial_namespaces.hpp), a trial finds
// in /dev its own GPU's device file and the driver's, and no other GPU's
// (stand-in device files where the host has none).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/cluster.hpp"

namespace {

using Json = nlohmann::json;
using hpo::testing::Cluster;
using hpo::testing::read_file;
using hpo::testing::wait_for;
using namespace std::chrono_literals;

// A trial program: marks that it started, tells the stand-in NVML that it
// holds `mb` MB and `sm` % of device `uuid` (when given), waits (bounded)
// until `together` trials have started, works a little longer (so that the
// worker's heartbeat samples it), writes its CUDA_VISIBLE_DEVICES and reports.
std::string write_trial(const std::string& dir, const std::string& nvml) {
  const std::string path = dir + "/gpu_trial.sh";
  std::ofstream(path) << "#!/bin/sh\nnvml='" << nvml << "'\n"
                      << R"sh(
dir="$1"; together="$2"; name="$3"; uuid="$4"; mb="$5"; sm="$6"
[ -n "$uuid" ] && echo "proc $uuid $$ $mb $sm" >> "$nvml"
: > "$dir/started.$name"
i=0
while [ "$(ls "$dir" | grep -c '^started\.')" -lt "$together" ] && [ $i -lt 600 ]; do
  sleep 0.1; i=$((i + 1))
done
sleep 1.5
printf '%s' "$CUDA_VISIBLE_DEVICES" > "$dir/devices.$name"
echo 'hpo-metric {"final": true, "value": 1}'
)sh";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

Json gpu_spec(const std::string& program, const std::string& dir, int trials, int together,
              const Json& resources, const std::vector<std::string>& use = {}) {
  Json argv = {"/bin/sh", program, dir, std::to_string(together), "{x}"};
  for (const auto& u : use) argv.push_back(u);
  return {
      {"name", "packed"},
      {"objective", {{"metric", "value"}, {"mode", "min"}}},
      {"parameters", {{"x", {{"type", "int"}, {"min", 0}, {"max", 1000000}}}}},
      {"search",
       {{"algorithm", "random"}, {"max_trials", trials}, {"max_concurrent", trials}, {"seed", 5}}},
      {"trial",
       {{"kind", "command"},
        {"argv", argv},
        {"resources", resources},
        {"max_attempts", 1},
        {"timeout_s", 120}}}};
}

std::vector<std::string> files_named(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(read_file(e.path()));
  return out;
}

TEST(GpuPackingEndToEnd, QuarterGpuTrialsShareADeviceAndMigInstancesAreDevices) {
  Cluster c;
  const std::string nvml = c.home() + "/nvml.txt";
  std::ofstream(nvml) << "gpu GPU-11111111-aaaa 81559 3000 37 NVIDIA H100 80GB HBM3\n"
                         "gpu GPU-22222222-bbbb 81920 0 0 NVIDIA A100-SXM4-80GB\n"
                         "mig MIG-33333333-cccc GPU-22222222-bbbb 9728 512 "
                         "NVIDIA A100-SXM4-80GB MIG 1g.10gb\n"
                         "mig MIG-44444444-dddd GPU-22222222-bbbb 19968 1024 "
                         "NVIDIA A100-SXM4-80GB MIG 2g.20gb\n";
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("g", 8, 1500, {}, {},
                 {{"LD_LIBRARY_PATH", hpo::testing::kBinaryDir + "/tests/fake_nvml"},
                  {"HPO_FAKE_NVML_FILE", nvml}});

  // The worker offers three devices: the H100 and the A100's two MIG instances.
  Json gpus;
  ASSERT_TRUE(wait_for(
      [&] {
        Json w = c.get("/api/workers");
        if (!w.is_object() || w["workers"].empty()) return false;
        gpus = w["workers"][0]["gpus"];
        return gpus.size() == 3;
      },
      60s))
      << gpus.dump() << c.logs();
  EXPECT_EQ(gpus[0]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[0]["memory_used_mb"], 3000);
  EXPECT_EQ(gpus[0]["utilization_pct"], 37);
  EXPECT_EQ(gpus[1]["uuid"], "MIG-33333333-cccc");
  EXPECT_EQ(gpus[1]["memory_total_mb"], 9728);
  EXPECT_EQ(gpus[1]["utilization_pct"], -1) << "the driver gives no utilisation per MIG instance";
  EXPECT_EQ(gpus[2]["name"], "NVIDIA A100-SXM4-80GB MIG 2g.20gb");
  EXPECT_EQ(gpus[2]["memory_used_mb"], 1024);

  // Five quarter-GPU trials on the H100: four at once, the fifth after.
  const std::string quarters = c.home() + "/quarters";
  std::filesystem::create_directories(quarters);
  const std::string program = write_trial(c.home(), nvml);
  const std::string packed =
      c.submit(gpu_spec(program, quarters, 5, 4, {{"gpus", 0.25}, {"gpu_model", "H100"}},
                        {"GPU-11111111-aaaa", "2000", "40"}));
  ASSERT_FALSE(packed.empty());
  Json s = c.wait_finished(packed, 180s);
  ASSERT_EQ(s.value("state", ""), "finished") << s.dump(2) << c.logs();
  EXPECT_EQ(s["counts"]["completed"], 5) << s.dump(2) << c.logs();
  EXPECT_EQ(hpo::testing::most_attempts_at_once(c, {packed}), 4) << c.logs();
  for (const auto& seen : files_named(quarters, "devices."))
    EXPECT_EQ(seen, "GPU-11111111-aaaa") << "a quarter of the H100 sees the H100 alone";
  // Each quarter is measured by its own process (2000 MB, 40 %), not by the
  // device's 3000 MB nor its neighbours'.
  Json page = c.get("/api/sweeps/" + packed + "/trials?limit=10");
  ASSERT_EQ(page["trials"].size(), 5u) << page.dump();
  for (const auto& t : page["trials"]) {
    const Json& m = t["metrics"];
    EXPECT_EQ(m.value("gpu.memory_peak_mb", -1.0), 2000) << t.dump();
    EXPECT_EQ(m.value("gpu.memory_mean_mb", -1.0), 2000) << t.dump();
    EXPECT_EQ(m.value("gpu.util_peak_pct", -1.0), 40) << t.dump();
  }
  auto csv = c.api().get("/api/sweeps/" + packed + "/trials?format=csv");
  ASSERT_TRUE(csv.ok() && csv->status == 200);
  const std::string header = csv->body.substr(0, csv->body.find('\n'));
  EXPECT_NE(header.find("gpu.memory_peak_mb"), std::string::npos) << header;
  EXPECT_NE(header.find("gpu.util_mean_pct"), std::string::npos) << header;

  // 30 GB requests on the 80 GB H100: two at a time.
  const std::string gb30_dir = c.home() + "/gb30";
  std::filesystem::create_directories(gb30_dir);
  const std::string gb30 = c.submit(gpu_spec(
      program, gb30_dir, 3, 2, {{"gpus", 0.1}, {"gpu_memory_gb", 30}, {"gpu_model", "H100"}}));
  ASSERT_FALSE(gb30.empty());
  s = c.wait_finished(gb30, 180s);
  ASSERT_EQ(s.value("state", ""), "finished") << s.dump(2) << c.logs();
  EXPECT_EQ(s["counts"]["completed"], 3) << s.dump(2);
  EXPECT_EQ(hpo::testing::most_attempts_at_once(c, {gb30}), 2) << c.logs();

  // A whole MIG instance, by model: the trial sees its UUID alone.
  const std::string mig_dir = c.home() + "/mig";
  std::filesystem::create_directories(mig_dir);
  const std::string mig =
      c.submit(gpu_spec(program, mig_dir, 1, 1, {{"gpus", 1}, {"gpu_model", "2g.20gb"}}));
  ASSERT_FALSE(mig.empty());
  s = c.wait_finished(mig, 120s);
  ASSERT_EQ(s.value("state", ""), "finished") << s.dump(2) << c.logs();
  EXPECT_EQ(files_named(mig_dir, "devices."), std::vector<std::string>{"MIG-44444444-dddd"});
  // It holds the instance alone: the instance's own memory in use is its.
  page = c.get("/api/sweeps/" + mig + "/trials");
  ASSERT_EQ(page["trials"].size(), 1u);
  EXPECT_EQ(page["trials"][0]["metrics"].value("gpu.memory_peak_mb", -1.0), 1024) << page.dump();
}

// Device files in /dev standing in for the driver's where the host has
// none (removed again); a host's own are left as they are.
class StandInDevices {
 public:
  explicit StandInDevices(const std::vector<std::string>& names) {
    for (const auto& n : names) {
      const std::string path = "/dev/" + n;
      if (std::filesystem::exists(path)) continue;
      std::ofstream(path) << "";
      made_.push_back(path);
    }
  }
  ~StandInDevices() {
    for (const auto& p : made_) std::filesystem::remove(p);
  }

 private:
  std::vector<std::string> made_;
};

TEST(GpuPackingEndToEnd, AConfinedTrialSeesItsOwnGpusDeviceFileAndNoOther) {
  if (::geteuid() != 0) GTEST_SKIP() << "stand-in device files in /dev need root";
  StandInDevices devices({"nvidia0", "nvidia1", "nvidiactl"});
  Cluster c;
  const std::string nvml = c.home() + "/nvml.txt";
  std::ofstream(nvml) << "gpu GPU-aaaaaaaa-0000 81559 0 0 NVIDIA H100 80GB HBM3\n"
                         "gpu GPU-bbbbbbbb-1111 81559 0 0 NVIDIA H100 80GB HBM3\n";
  ASSERT_NO_FATAL_FAILURE(c.start_scheduler());
  c.start_worker("confined", 2, 1500, {"--trial-namespaces", "on"}, {},
                 {{"LD_LIBRARY_PATH", hpo::testing::kBinaryDir + "/tests/fake_nvml"},
                  {"HPO_FAKE_NVML_FILE", nvml}});
  // Outside the worker's HPO_HOME (which no confined trial sees), named by the command.
  char tmpl[] = "/tmp/hpo-gpu-dev-XXXXXX";
  const std::string root = ::mkdtemp(tmpl), out = root + "/seen", program = root + "/dev_trial.sh";
  std::filesystem::create_directories(out);
  std::ofstream(program)
      << "#!/bin/sh\n"
         "ls /dev | grep nvidia | tr '\\n' ' ' > \"$1/seen.$2.$CUDA_VISIBLE_DEVICES\"\n"
         "echo 'hpo-metric {\"final\": true, \"value\": 1}'\n";
  auto spec = [&](int trials, double gpus) {
    Json sp = gpu_spec("", out, trials, trials, {{"gpus", gpus}});
    sp["trial"]["argv"] = {"/bin/sh", program, out, "{x}"};
    return sp;
  };
  const std::string two = c.submit(spec(2, 1));
  ASSERT_FALSE(two.empty());
  Json s = c.wait_finished(two, 120s);
  ASSERT_EQ(s.value("state", ""), "finished") << s.dump(2) << c.logs();
  ASSERT_EQ(s["counts"]["completed"], 2) << s.dump(2) << c.logs();
  std::vector<std::string> seen;
  for (const auto& e : std::filesystem::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    seen.push_back(name.substr(name.rfind('.') + 1) + ": " + read_file(e.path()));
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"GPU-aaaaaaaa-0000: nvidia0 nvidiactl ",
                                            "GPU-bbbbbbbb-1111: nvidia1 nvidiactl "}))
      << c.logs();

  // A trial without a GPU finds none of them.
  std::filesystem::remove_all(out);
  std::filesystem::create_directories(out);
  const std::string none = c.submit(spec(1, 0));
  ASSERT_FALSE(none.empty());
  s = c.wait_finished(none, 120s);
  ASSERT_EQ(s.value("state", ""), "finished") << s.dump(2) << c.logs();
  std::vector<std::string> cpu;
  for (const auto& e : std::filesystem::directory_iterator(out)) cpu.push_back(read_file(e.path()));
  EXPECT_EQ(cpu, std::vector<std::string>{""}) << c.logs();
  std::filesystem::remove_all(root);
}

}  // namespace
