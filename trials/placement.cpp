#include "trials/placement.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "trials/spec/spec.hpp"
#include "trials/trial.hpp"

namespace hpo::trials {
namespace {

using Json = nlohmann::json;

bool label_ok(const std::map<std::string, std::string>& have, const std::string& want) {
  auto eq = want.find('=');
  auto it = have.find(want.substr(0, eq));
  return it != have.end() && (eq == std::string::npos || it->second == want.substr(eq + 1));
}

int matching(const ResourceRequest& r, const std::vector<GpuDevice>& gpus) {
  return static_cast<int>(std::count_if(gpus.begin(), gpus.end(),
                                        [&](const GpuDevice& g) { return gpu_matches(r, g); }));
}

// Devices the request needs at once: one for a share, else one per slot.
int devices_needed(const ResourceRequest& r) {
  return r.shares_gpu() ? 1 : r.slots;
}

std::string gpu_wanted(const ResourceRequest& r) {
  std::string s = r.shares_gpu() ? fmt::format("a {:g} share of a GPU (resources.gpus)", r.gpus)
                                 : fmt::format("{:g} whole GPU{}", static_cast<double>(r.slots),
                                               r.slots == 1 ? "" : "s");
  if (!r.gpu_model.empty()) s += fmt::format(" of model '{}' (resources.gpu_model)", r.gpu_model);
  if (r.gpu_memory_gb > 0)
    s += fmt::format(" with at least {:g} GB (resources.gpu_memory_gb)", r.gpu_memory_gb);
  return s;
}

std::string gpus_had(const std::vector<GpuDevice>& gpus) {
  if (gpus.empty()) return "none";
  std::vector<std::string> each;
  for (const auto& g : gpus)
    each.push_back(fmt::format("{} {:.0f} GB", g.model, static_cast<double>(g.memory_mb) / 1024));
  return fmt::format("{}", fmt::join(each, ", "));
}

}  // namespace

ResourceRequest request_for(const TrialRecipe& recipe) {
  ResourceRequest r;
  r.slots = recipe.slots();
  r.gpus = recipe.gpus;
  r.gpu_memory_gb = recipe.gpu_memory_gb;
  r.gpu_model = recipe.gpu_model;
  r.cpus = recipe.cpus;
  r.memory_gb = recipe.memory_gb;
  r.torch = recipe.kind == TrialKind::kTorch;
  r.labels = recipe.labels;
  r.ranks = recipe.data_parallel.replicas;
  r.per_host = recipe.data_parallel.per_host;
  return r;
}

ResourceRequest rank_request(const ResourceRequest& r) {
  ResourceRequest one = r;
  const int k = std::max(1, r.ranks);
  one.slots = 1;
  one.gpus = r.gpus > 0 ? 1 : 0;
  one.cpus = r.cpus / k;
  one.memory_gb = r.memory_gb / k;
  one.ranks = 1;
  one.per_host = 0;
  return one;
}

int ranks_fitting_idle(const ResourceRequest& r, const Offer& o) {
  const ResourceRequest one = rank_request(r);
  if (!fits_idle(one, o)) return 0;
  int n = o.total_slots;
  if (one.gpus > 0) n = std::min(n, matching(one, o.all_gpus));
  if (one.cpus > 0 && o.total_cpus >= 0)
    n = std::min(n, static_cast<int>(std::floor(o.total_cpus / one.cpus + 1e-9)));
  if (one.memory_gb > 0 && o.total_memory_gb >= 0)
    n = std::min(n, static_cast<int>(std::floor(o.total_memory_gb / one.memory_gb + 1e-9)));
  return std::max(0, n);
}

std::string gang_never_fits(const ResourceRequest& r,
                            const std::vector<std::pair<std::string, Offer>>& workers) {
  const int k = std::max(1, r.ranks);
  if (r.per_host == 0)
    for (const auto& [name, o] : workers)
      if (fits_idle(r, o)) return "";
  int ranks = 0, hosts = 0;
  std::vector<std::string> have;
  for (const auto& [name, o] : workers) {
    const int n = ranks_fitting_idle(r, o);
    if (n > 0 && have.size() < 4) have.push_back(fmt::format("{} {}", name, n));
    ranks += n;
    hosts += r.per_host > 0 && n >= r.per_host;
  }
  const std::string where = have.empty() ? "none" : fmt::format("{}", fmt::join(have, ", "));
  if (r.per_host > 0) {
    const int needed = k / r.per_host;
    if (hosts >= needed) return "";
    return fmt::format(
        "its {} data-parallel ranks need {} workers with {} free slots each that fit a rank "
        "(data_parallel.per_host); {} of the {} registered workers have that (ranks that fit: {})",
        k, needed, r.per_host, hosts, workers.size(), where);
  }
  if (ranks >= k) return "";
  return fmt::format(
      "its {} data-parallel ranks need {} slots that fit a rank, across workers; the {} "
      "registered workers have {} (ranks that fit: {})",
      k, k, workers.size(), ranks, where);
}

Offer slots_only_offer(int free) {
  Offer o;
  o.slots = o.total_slots = free;
  for (int i = 0; i < free; ++i) o.free.push_back(i);
  o.torch = true;
  return o;
}

GpuRoom gpu_take(const ResourceRequest& r, const GpuDevice& g) {
  if (!r.shares_gpu()) return GpuRoom{kWholeShare, g.memory_mb};
  GpuRoom t;
  t.share = static_cast<int>(std::lround(r.gpus * kWholeShare));
  t.mb = r.gpu_memory_gb > 0 ? static_cast<std::int64_t>(std::ceil(r.gpu_memory_gb * 1024))
                             : g.memory_mb * t.share / kWholeShare;
  return t;
}

bool gpu_matches(const ResourceRequest& r, const GpuDevice& g) {
  if (r.gpu_memory_gb > 0 && static_cast<double>(g.memory_mb) < r.gpu_memory_gb * 1024)
    return false;
  return r.gpu_model.empty() ||
         ascii_lower(g.model).find(ascii_lower(r.gpu_model)) != std::string::npos;
}

bool fits_now(const ResourceRequest& r, const Offer& o) {
  if (!o.project.empty() && !r.project.empty() && r.project != o.project) return false;
  if (r.slots > o.slots) return false;
  if (r.torch && !o.torch) return false;
  if (r.torch && r.gpus > 0 && !o.cuda) return false;
  if (r.shares_gpu()) {
    bool room = false;
    for (std::size_t i = 0; i < o.all_gpus.size() && i < o.room.size() && !room; ++i) {
      const GpuRoom take = gpu_take(r, o.all_gpus[i]);
      room =
          gpu_matches(r, o.all_gpus[i]) && o.room[i].share >= take.share && o.room[i].mb >= take.mb;
    }
    if (!room) return false;
  } else if (r.gpus > 0 && matching(r, o.gpus) < r.slots) {
    return false;
  }
  if (r.cpus > 0 && o.cpus >= 0 && r.cpus > o.cpus + 1e-9) return false;
  if (r.memory_gb > 0 && o.memory_gb >= 0 && r.memory_gb > o.memory_gb + 1e-9) return false;
  return std::all_of(r.labels.begin(), r.labels.end(),
                     [&](const std::string& l) { return label_ok(o.labels, l); });
}

bool fits_idle(const ResourceRequest& r, const Offer& o) {
  Offer idle = o;
  idle.slots = o.total_slots;
  idle.gpus = o.all_gpus;
  idle.room.clear();
  for (const auto& g : o.all_gpus) idle.room.push_back(GpuRoom{kWholeShare, g.memory_mb});
  idle.cpus = o.total_cpus;
  idle.memory_gb = o.total_memory_gb;
  return fits_now(r, idle);
}

std::string never_fits(const ResourceRequest& r, const Offer& o) {
  if (!o.project.empty() && !r.project.empty() && r.project != o.project)
    return fmt::format(
        "takes project '{}' trials only (hpo-worker --project), this is project '{}'", o.project,
        r.project);
  if (r.torch && !o.torch) return "runs no torch trials (hpo-worker built without LibTorch)";
  if (r.torch && r.gpus > 0 && !o.cuda)
    return "has no CUDA LibTorch for a torch trial on GPUs (resources.gpus)";
  if (r.slots > o.total_slots)
    return fmt::format(
        "a trial needs {} slots (resources.gpus / data_parallel.replicas), the worker has {}",
        r.slots, o.total_slots);
  if (r.gpus > 0 && matching(r, o.all_gpus) < devices_needed(r))
    return fmt::format("a trial needs {}, the worker has {}", gpu_wanted(r), gpus_had(o.all_gpus));
  if (r.cpus > 0 && o.total_cpus >= 0 && r.cpus > o.total_cpus + 1e-9)
    return fmt::format("a trial needs {:g} cpus (resources.cpus), the worker has {:g}", r.cpus,
                       o.total_cpus);
  if (r.memory_gb > 0 && o.total_memory_gb >= 0 && r.memory_gb > o.total_memory_gb + 1e-9)
    return fmt::format(
        "a trial needs {:g} GB of memory (resources.memory_gb), the worker has {:.1f}", r.memory_gb,
        o.total_memory_gb);
  for (const auto& l : r.labels)
    if (!label_ok(o.labels, l)) {
      auto it = o.labels.find(l.substr(0, l.find('=')));
      return it == o.labels.end()
                 ? fmt::format(
                       "a trial needs label '{}' (resources.labels), the worker has no '{}'", l,
                       l.substr(0, l.find('=')))
                 : fmt::format(
                       "a trial needs label '{}' (resources.labels), the worker has '{}={}'", l,
                       it->first, it->second);
    }
  return "";
}

Offer idle_offer(const WorkerInfo& w) {
  Offer o;
  o.slots = o.total_slots = w.slots;
  for (const auto& g : w.gpus) {
    o.all_gpus.push_back({g.name, g.memory_total_mb, {}});
    o.room.push_back(GpuRoom{kWholeShare, g.memory_total_mb});
  }
  o.gpus = o.all_gpus;
  o.cpus = o.total_cpus = w.cpus > 0 ? w.cpus : -1;
  o.memory_gb = o.total_memory_gb = w.memory_gb > 0 ? w.memory_gb : -1;
  o.torch = w.torch;
  o.cuda = w.cuda;
  o.labels = w.labels;
  o.project = w.project;
  return o;
}

Result<std::pair<std::string, std::string>> parse_label(std::string_view text) {
  auto eq = text.find('=');
  std::string key(text.substr(0, eq));
  std::string value(eq == std::string_view::npos ? std::string_view() : text.substr(eq + 1));
  if (key.empty() || key.size() > 63)
    return Error::invalid("label", fmt::format("'{}': expected key or key=value with a key of 1 "
                                               "to 63 characters",
                                               text.substr(0, 80)));
  for (unsigned char c : key)
    if (!(std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == '/'))
      return Error::invalid("label", fmt::format("'{}': the key may hold letters, digits and . _ "
                                                 "- / only",
                                                 text.substr(0, 80)));
  if (value.size() > 255)
    return Error::invalid("label", fmt::format("'{}...': the value is longer than 255 characters",
                                               text.substr(0, 40)));
  for (unsigned char c : value)
    if (c < 0x20 || c == 0x7f)
      return Error::invalid("label", "the value holds a control character");
  return std::pair{std::move(key), std::move(value)};
}

std::string to_json(const ResourceRequest& r) {
  Json j{{"slots", r.slots}, {"gpus", r.gpus}, {"torch", r.torch}};
  if (r.gpu_memory_gb > 0) j["gpu_mb"] = r.gpu_memory_gb * 1024;
  if (!r.gpu_model.empty()) j["gpu_model"] = ascii_lower(r.gpu_model);
  if (r.cpus > 0) j["cpus"] = r.cpus;
  if (r.memory_gb > 0) j["memory_gb"] = r.memory_gb;
  j["labels"] = Json::array();
  for (const auto& l : r.labels) j["labels"].push_back(l);
  if (r.ranks > 1) j["ranks"] = r.ranks;
  if (r.per_host > 0) j["per_host"] = r.per_host;
  return j.dump();
}

Result<ResourceRequest> request_from_json(std::string_view text) {
  auto j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error::invalid("needs", "not a JSON object");
  ResourceRequest r;
  try {
    r.slots = j.value("slots", 1);
    r.gpus = j.value("gpus", 0.0);
    r.gpu_memory_gb = j.value("gpu_mb", 0.0) / 1024;
    r.gpu_model = j.value("gpu_model", std::string());
    r.cpus = j.value("cpus", 0.0);
    r.memory_gb = j.value("memory_gb", 0.0);
    r.torch = j.value("torch", false);
    r.ranks = j.value("ranks", 1);
    r.per_host = j.value("per_host", 0);
    if (j.contains("labels"))
      for (const auto& l : j.at("labels")) r.labels.push_back(l.get<std::string>());
  } catch (const Json::exception& e) {
    return Error::invalid("needs", e.what());
  }
  return r;
}

Result<GangLayout> gang_from_json(std::string_view text) {
  auto j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error::invalid("gang", "not a JSON object");
  GangLayout g;
  try {
    g.world = j.at("world").get<int>();
    for (const auto& p : j.at("ranks"))
      g.parts.push_back(
          {p.at("worker").get<std::string>(), p.at("first").get<int>(), p.at("count").get<int>()});
  } catch (const Json::exception& e) {
    return Error::invalid("gang", e.what());
  }
  if (g.parts.empty() || g.world < 1) return Error::invalid("gang", "no ranks");
  return g;
}

Result<RankShare> rank_share_from_json(std::string_view text) {
  auto j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error::invalid("rank share", "not a JSON object");
  RankShare r;
  try {
    auto& t = r.trial;
    t.id = j.at("trial").get<std::string>();
    t.sweep_id = j.at("sweep").get<std::string>();
    t.attempt = j.at("attempt").get<int>();
    t.number = j.value("number", std::int64_t{0});
    t.role = parse_trial_role(j.value("kind", "trial")).value_or(TrialRole::kTrial);
    t.state = TrialState::kRunning;
    t.plan = plan_from_text(j.value("extra", std::string()));
    auto params = params_from_json(j.value("params", std::string("{}")));
    if (!params) return params.error();
    t.params = std::move(params).value();
    r.first = j.at("first").get<int>();
    r.count = j.at("count").get<int>();
    r.world = j.at("world").get<int>();
    r.leader = j.at("leader").get<std::string>();
  } catch (const Json::exception& e) {
    return Error::invalid("rank share", e.what());
  }
  return r;
}

namespace {
// "0,2" -> {0, 2}; "" -> {}.
Result<std::vector<int>> index_list(std::string_view text, std::string_view whole) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string item(text.substr(at, end - at));
    char* stop = nullptr;
    const long v = std::strtol(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || v < 0 || v > 1'000'000)
      return Error::internal(
          fmt::format("claim_batch: a claim's placement is not '0,2' or '0,2|1,3': '{}'", whole));
    out.push_back(static_cast<int>(v));
    at = end + 1;
  }
  return out;
}
}  // namespace

Result<Placed> placed_from_text(std::string_view text) {
  Placed p;
  const auto bar = text.find('|');
  auto slots = index_list(text.substr(0, bar), text);
  if (!slots) return slots.error();
  p.slots = std::move(*slots);
  if (bar != std::string_view::npos) {
    auto devices = index_list(text.substr(bar + 1), text);
    if (!devices) return devices.error();
    p.devices = std::move(*devices);
    p.devices_named = true;
  }
  return p;
}

std::vector<int> devices_of(const Placed& p, int device_count) {
  if (p.devices_named) return p.devices;
  std::vector<int> out;
  for (int s : p.slots)
    if (s < device_count) out.push_back(s);
  return out;
}

std::string to_json(const Offer& o) {
  auto gpus = [](const std::vector<GpuDevice>& list) {
    Json a = Json::array();
    for (const auto& g : list)
      a.push_back(Json{{"model", ascii_lower(g.model)}, {"mb", g.memory_mb}});
    return a;
  };
  Json labels = Json::object();
  for (const auto& [k, v] : o.labels) labels[k] = v;
  Json j{{"slots", o.slots},
         {"gpus", gpus(o.gpus)},
         {"cpus", o.cpus},
         {"memory_gb", o.memory_gb},
         {"total_slots", o.total_slots},
         {"all_gpus", gpus(o.all_gpus)},
         {"total_cpus", o.total_cpus},
         {"total_memory_gb", o.total_memory_gb},
         {"torch", o.torch},
         {"cuda", o.cuda},
         {"labels", labels}};
  if (!o.project.empty()) j["project"] = o.project;
  // Per device what is not promised (functions/04_placement.lua: devs); an
  // offer without it is an earlier version's, whose slot i owns device i.
  if (!o.all_gpus.empty() && o.room.size() == o.all_gpus.size()) {
    Json devs = Json::array();
    for (const auto& r : o.room) devs.push_back(Json{{"share", r.share}, {"mb", r.mb}});
    j["devs"] = devs;
  }
  // Without the free slots' indices (an offer written by hand) the claim
  // assumes the lowest ones (functions/04_placement.lua, free_slots_of).
  if (!o.free.empty()) j["free"] = o.free;
  return j.dump();
}

}  // namespace hpo::trials
