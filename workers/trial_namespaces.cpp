#include "workers/trial_namespaces.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <string_view>

#include <fmt/format.h>

#include "core/child_process.hpp"

namespace hpo::workers {
namespace {

// The driver's nodes every CUDA program opens, whichever GPU it uses; without
// a GPU of its own a trial gets none of them.
constexpr const char* kDriverNodes[] = {"/dev/nvidiactl", "/dev/nvidia-uvm",
                                        "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"};

// Starts `true` confined as trials would be; the kernel's refusal, if any.
Status probe(const Confinement& c) {
  SpawnOptions o;
  o.argv = {"true"};
  o.env = {"PATH=/usr/bin:/bin"};
  o.output = SpawnOptions::Output::kNull;
  o.confinement = c;
  auto child = ChildProcess::spawn(o);
  if (!child) return child.error();
  while (!child->poll(100, [](Stream, std::string_view) {})) {
  }
  const int status = child->exit_status().value_or(-1);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error::unavailable("a confined 'true' " + describe_wait_status(status));
  return {};
}

}  // namespace

Result<TrialNamespaces> TrialNamespaces::open(const NamespaceOptions& options, bool root_like) {
  TrialNamespaces ns;
  if (options.mode == "off") {
    ns.why_off_ = "--trial-namespaces off";
    return ns;
  }
  // Root needs no user namespace; a worker that switches users by its
  // capabilities keeps every uid in one (the systemd unit).
  const bool root = ::geteuid() == 0;
  ns.user_namespace_ = !root || !root_like;
  ns.map_all_ids_ = !root && root_like;
  ns.hidden_ = options.hidden;
  Confinement c;
  c.user_namespace = ns.user_namespace_;
  c.map_all_ids = ns.map_all_ids_;
  if (auto st = probe(c); !st) {
    if (options.mode == "on")
      return Error::unavailable(fmt::format(
          "--trial-namespaces on: this host does not allow them ({}); a worker that is not "
          "root needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
          "user.max_user_namespaces > 0)",
          st.error().message));
    ns.why_off_ = st.error().message;
    return ns;
  }
  ns.on_ = true;
  return ns;
}

std::string TrialNamespaces::describe() const {
  if (!on_) return fmt::format("no namespaces of their own ({})", why_off_);
  return fmt::format(
      "each command trial in namespaces of its own{}: its processes, /tmp, /dev/shm, IPC, "
      "devices and a loopback-only network",
      user_namespace_ ? " (a user namespace: this worker is not root)" : "");
}

void keep_named(Confinement& c, const std::vector<std::string>& argv, const std::string& cwd,
                const std::vector<std::string>& env) {
  auto name = [&](std::string_view text) {
    for (std::size_t start = 0; start <= text.size();) {
      auto end = std::min(text.find(':', start), text.size());
      if (end > start && text[start] == '/') c.kept.emplace_back(text.substr(start, end - start));
      start = end + 1;
    }
  };
  for (const auto& a : argv) {
    name(a);
    if (auto eq = a.find('='); eq != std::string::npos) name(std::string_view(a).substr(eq + 1));
  }
  name(cwd);
  for (const auto& kv : env) name(std::string_view(kv).substr(kv.find('=') + 1));
}

void TrialNamespaces::hide(const std::string& path) const {
  if (path.empty() || path.front() != '/') return;
  std::lock_guard lk(later_->mu);
  if (std::find(later_->paths.begin(), later_->paths.end(), path) == later_->paths.end())
    later_->paths.push_back(path);
}

std::optional<Confinement> TrialNamespaces::for_attempt(
    const std::string& work_dir, const std::vector<std::string>& devices) const {
  if (!on_) return std::nullopt;
  Confinement c;
  c.user_namespace = user_namespace_;
  c.map_all_ids = map_all_ids_;
  c.hidden = hidden_;
  {
    std::lock_guard lk(later_->mu);
    c.hidden.insert(c.hidden.end(), later_->paths.begin(), later_->paths.end());
  }
  c.own_dir = work_dir;
  if (!devices.empty()) c.devices.assign(std::begin(kDriverNodes), std::end(kDriverNodes));
  c.devices.insert(c.devices.end(), devices.begin(), devices.end());
  return c;
}

}  // namespace hpo::workers
