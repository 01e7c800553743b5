#include "core/local_state.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace hpo {

std::string hpo_home() {
  if (const char* h = std::getenv("HPO_HOME"); h && *h) return h;
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.hpo";
  return ".hpo";
}

std::string local_state_path() {
  return hpo_home() + "/scheduler.json";
}

Result<LocalState> read_local_state() {
  std::string path = local_state_path();
  std::ifstream in(path);
  if (!in)
    return Error::not_found(fmt::format(
        "no local scheduler found ({} does not exist): start hpo-scheduler or pass the address",
        path));
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error::invalid(path, "not a JSON object (a half-written or foreign file?)");
  LocalState s;
  s.redis = j.value("redis", "");
  s.api = j.value("api", "");
  s.token = j.value("token", "");
  s.ca_file = j.value("ca_file", "");
  s.pid = j.value("pid", 0L);
  return s;
}

Status write_local_state(const LocalState& state) {
  std::error_code ec;
  std::filesystem::create_directories(hpo_home(), ec);
  std::string path = local_state_path();
  std::string tmp = path + ".tmp." + std::to_string(state.pid);
  nlohmann::json j = {
      {"redis", state.redis}, {"api", state.api}, {"token", state.token}, {"pid", state.pid}};
  if (!state.ca_file.empty()) j["ca_file"] = state.ca_file;
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return Error::unavailable("cannot write " + tmp);
    ::chmod(tmp.c_str(), 0600);
    out << j.dump(2) << "\n";
    if (!out.flush()) return Error::unavailable("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    return Error::unavailable(fmt::format("cannot rename {} to {}: {}", tmp, path, ec.message()));
  return {};
}

void remove_local_state() {
  std::error_code ec;
  std::filesystem::remove(local_state_path(), ec);
}

}  // namespace hpo
