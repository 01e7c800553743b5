// `hpo export` and `hpo predict`: a sweep's ensemble downloaded into a
// directory, and that directory handed to hpo-predict, a program of its own
// because it links LibTorch and the CLI must not.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/download.hpp"
#include "core/child_process.hpp"
#include "core/result.hpp"
#include "trials/artifacts.hpp"

namespace hpo::cli {

namespace {

// Downloads the ensemble of sweep `id` into `dir`: the record and the manifest
// (the sweep's own records), the spec (its trial recipe rebuilds the
// models) and each member's model.pt under members/<trial>/, the manifest's
// artifact paths rewritten to match. REST only: the CLI never links LibTorch.
int export_ensemble(Client& client, const std::string& id, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  int code = 0;
  auto sweep = client.call("GET", "/api/sweeps/" + id, code);
  if (!sweep) return code;
  std::string record;
  if (!client.call("GET", "/api/sweeps/" + id + "/ensemble", code, "", &record)) return code;
  std::string manifest_text;
  if (!client.call("GET",
                   "/api/sweeps/" + id + "/artifacts/" + hpo::trials::artifact::kEnsembleManifest,
                   code, "", &manifest_text))
    return code;
  auto manifest = Json::parse(manifest_text, nullptr, false);
  if (manifest.is_discarded() || !manifest.contains("members") || !manifest["members"].is_array())
    return fail(kUnreachable, "the stored manifest of sweep " + id + " is not a manifest");
  std::error_code ec;
  fs::create_directories(dir / "members", ec);
  if (ec) return fail(kUsage, "cannot create " + (dir / "members").string() + ": " + ec.message());
  auto write = [&](const fs::path& p, const std::string& bytes) {
    fs::create_directories(p.parent_path(), ec);
    std::ofstream out(p, std::ios::binary);
    out << bytes;
    return static_cast<bool>(out);
  };
  for (auto& m : manifest["members"]) {
    const std::string trial = m.value("trial_id", "");
    namespace artifact = hpo::trials::artifact;
    const std::string rel = "members/" + trial + "/" + artifact::kModel;
    fs::create_directories((dir / rel).parent_path(), ec);
    // Streamed to disk (a model of gigabytes), resumed where a broken connection stopped.
    if (auto st = hpo::cli::download_file(
            client.http, "/api/trials/" + trial + "/artifacts/" + artifact::kModel, dir / rel);
        !st)
      return fail(st.error().code == hpo::ErrorCode::kUnavailable ? kUnreachable : kUsage,
                  "member " + trial + "'s model: " + st.error().message);
    m["artifact"] = rel;
  }
  if (!write(dir / hpo::trials::artifact::kEnsembleManifest, manifest.dump(2) + "\n") ||
      !write(dir / hpo::trials::artifact::kEnsembleRecord, record) ||
      !write(dir / "spec.json", (*sweep)["spec"].dump(2) + "\n"))
    return fail(kUsage, "cannot write into " + dir.string());
  return kOk;
}

// Takes "--sweep ID" out of the command's arguments.
std::optional<std::string> take_sweep(std::vector<std::string>& rest, const Options& o) {
  std::optional<std::string> sweep;
  for (std::size_t i = 1; i < o.args.size(); ++i) {
    if (o.args[i] == "--sweep" && i + 1 < o.args.size())
      sweep = o.args[++i];
    else if (o.args[i].rfind("--sweep=", 0) == 0)
      sweep = o.args[i].substr(8);
    else
      rest.push_back(o.args[i]);
  }
  return sweep;
}

// hpo-predict: beside this binary, in the build tree's workers/, or on PATH.
std::string find_predictor() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (const fs::path& p : {self.parent_path() / "hpo-predict",
                              self.parent_path().parent_path() / "workers" / "hpo-predict"})
      if (::access(p.c_str(), X_OK) == 0) return p.string();
  return "hpo-predict";
}

}  // namespace

int cmd_export(Client& client, const Options& o) {
  std::vector<std::string> rest;
  auto sweep = take_sweep(rest, o);
  if (!sweep || rest.size() != 1) return fail(kUsage, "usage: hpo export --sweep ID DIR");
  int code = export_ensemble(client, *sweep, rest[0]);
  if (code == kOk) std::printf("%s\n", rest[0].c_str());
  return code;
}

int cmd_predict(Client& client, const Options& o) {
  namespace fs = std::filesystem;
  std::vector<std::string> rest;
  auto sweep = take_sweep(rest, o);
  std::vector<std::string> args{"hpo-predict", "--ensemble", ""};
  std::string input;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if ((rest[i] == "--output" || rest[i] == "-o" || rest[i] == "--device") &&
        i + 1 < rest.size()) {
      args.push_back(rest[i]);
      args.push_back(rest[++i]);
    } else if (input.empty() && rest[i].rfind("-", 0) != 0) {
      input = rest[i];
    } else {
      return fail(kUsage, "unknown argument " + rest[i]);
    }
  }
  if (!sweep || input.empty())
    return fail(kUsage, "usage: hpo predict --sweep ID INPUT [--output F] [--device cpu|cuda]");
  std::string tmpl = (fs::temp_directory_path() / "hpo-ensemble-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return fail(kUsage, "cannot create a temporary directory");
  const fs::path dir(tmpl);
  int code = export_ensemble(client, *sweep, dir);
  if (code == kOk) {
    args[2] = dir.string();
    args.push_back(input);
    const std::string exe = find_predictor();
    std::fflush(stdout);
    SpawnOptions options;
    options.argv = args;
    options.argv[0] = exe;
    for (char** e = environ; *e; ++e) options.env.emplace_back(*e);
    options.output = SpawnOptions::Output::kInherit;  // its output is the command's
    auto child = ChildProcess::spawn(options);
    if (!child) {
      std::fprintf(stderr, "hpo: cannot run %s: %s (build the hpo-predict target, LibTorch)\n",
                   exe.c_str(), child.error().message.c_str());
      code = 127;
    } else {
      while (!child->poll(1000, {})) {
      }
      const int status = child->exit_status().value_or(-1);
      code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return code;
}

}  // namespace hpo::cli
