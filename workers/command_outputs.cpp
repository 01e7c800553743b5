#include "workers/command_outputs.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "ensemble/bagging_json.hpp"
#include "ensemble/prediction_reader.hpp"
#include "trials/artifacts.hpp"
#include "workers/trial_files.hpp"

namespace hpo::workers {
namespace {

namespace fs = std::filesystem;

Error bad(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), {}};
}

// A file the trial left in its output folder, never through a link.
Result<std::string> read_file(const fs::path& path, std::int64_t limit) {
  auto bytes = read_beneath(path.parent_path().string(), path.filename().string(), limit);
  if (!bytes) return bad(fmt::format("{}: {}", path.filename().string(), bytes.error().message));
  return bytes;
}

bool plain_name(const std::string& name) {
  if (name.empty() || name.size() > 200 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

struct Part {
  const char* stem;      // file stem: validation, test, oob
  const char* artifact;  // the prediction artifact it becomes
};
constexpr Part kParts[] = {{"validation", trials::artifact::kValPredictions},
                           {"test", trials::artifact::kTestPredictions},
                           {"oob", trials::artifact::kOobPredictions}};

// One part's predictions (validation, test or oob) as trial.data describes
// them; the files read are added to `used`.
Status collect_predictions(const std::string& dir, const Part& part,
                           const trials::CommandData& data, const ensemble::BaggingPlan* plan,
                           CommandOutputs& out, std::set<std::string>& used) {
  const std::string stem = part.stem;
  const fs::path csv = fs::path(dir) / (stem + ".csv");
  const fs::path npy = fs::path(dir) / (stem + ".npy");
  const fs::path targets = fs::path(dir) / (stem + "_targets.npy");
  std::error_code ec;
  const bool has_csv = fs::is_regular_file(csv, ec), has_npy = fs::is_regular_file(npy, ec);
  ensemble::PredictionShape shape;
  shape.regression = data.regression;
  shape.classes = data.classes;
  if (stem == "validation") {
    shape.rows = data.validation_rows;
    shape.rows_field = "trial.data.validation_rows";
  } else if (stem == "test") {
    shape.rows = data.test_rows;
    shape.rows_field = "trial.data.test_rows";
  } else {
    if (!plan) {
      if (has_csv || has_npy)
        out.notes.push_back(
            fmt::format("[hpo] {}.{} ignored: only ensemble members predict out-of-bag rows", stem,
                        has_csv ? "csv" : "npy"));
      used.insert(stem + ".csv");
      used.insert(stem + ".npy");
      used.insert(stem + "_targets.npy");
      return {};
    }
    shape.row_ids = plan->oob_rows;
    if (shape.row_ids.empty()) return {};  // every row was drawn: nothing is out of bag
  }
  if (has_csv && has_npy)
    return bad(fmt::format("HPO_OUTPUT_DIR holds both {0}.csv and {0}.npy: write one", stem));
  if (!has_csv && !has_npy) {
    if (plan && stem == "validation")
      return bad(
          "the ensemble member wrote no validation predictions: expected validation.csv "
          "(row_id,target,...) or validation.npy in HPO_OUTPUT_DIR");
    if (plan && stem == "test" && data.test_rows > 0)
      return bad(fmt::format(
          "the ensemble member wrote no test predictions: expected test.csv or test.npy "
          "in HPO_OUTPUT_DIR (trial.data.test_rows is {})",
          data.test_rows));
    return {};
  }
  if (stem == "test" && data.test_rows == 0)
    return bad(
        fmt::format("{}.{}: trial.data.test_rows is 0 (no test set); set it to the "
                    "test set's row count",
                    stem, has_csv ? "csv" : "npy"));
  Result<ensemble::PredictionFile> file = bad("");
  if (has_csv) {
    auto text = read_file(csv, kMaxPredictionFileBytes);
    if (!text) return text.error();
    file = ensemble::read_prediction_csv(*text, stem + ".csv", shape);
    used.insert(stem + ".csv");
  } else {
    auto values = read_file(npy, kMaxPredictionFileBytes);
    if (!values) return values.error();
    if (!fs::is_regular_file(targets, ec))
      return bad(
          fmt::format("{0}.npy needs {0}_targets.npy beside it (the true class or "
                      "value of each row)",
                      stem));
    auto t = read_file(targets, kMaxPredictionFileBytes);
    if (!t) return t.error();
    file = ensemble::read_prediction_npy(*values, stem + ".npy", *t, stem + "_targets.npy", shape);
    used.insert(stem + ".npy");
    used.insert(stem + "_targets.npy");
  }
  if (!file) return file.error();
  out.artifacts.emplace_back(part.artifact, ensemble::encode_prediction_file(*file));
  return {};
}

// `used`: the files already read as predictions, not kept a second time.
void keep_other_files(const std::string& dir, const std::set<std::string>& used,
                      CommandOutputs& out) {
  std::error_code ec;
  std::vector<fs::path> kept;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (used.count(name)) continue;
    std::error_code sec;
    const bool folder = it->is_directory(sec) && !it->is_symlink(sec);
    if (!folder && (!it->is_regular_file(sec) || it->is_symlink(sec))) {
      out.notes.push_back(
          fmt::format("[hpo] output {} not kept: only plain files and folders are", name));
      continue;
    }
    if (!plain_name(name)) {
      out.notes.push_back(fmt::format(
          "[hpo] output file not kept: its name must be made of A-Z a-z 0-9 . _ - only"));
      continue;
    }
    kept.push_back(it->path());
  }
  std::sort(kept.begin(), kept.end());
  for (std::size_t i = 0; i < kept.size(); ++i) {
    const std::string name = kept[i].filename().string();
    if (static_cast<int>(i) >= kMaxKeptFiles) {
      out.notes.push_back(fmt::format("[hpo] output {} not kept: at most {} files and folders are",
                                      name, kMaxKeptFiles));
      continue;
    }
    std::error_code sec;
    if (fs::is_directory(fs::symlink_status(kept[i], sec))) {
      // Its archive's name must not be a kept file's (run/ and run.tar).
      if (std::binary_search(kept.begin(), kept.end(), kept[i].parent_path() / (name + ".tar"))) {
        out.notes.push_back(fmt::format(
            "[hpo] output folder {0} not kept: a file {0}.tar is, under the name its archive "
            "would have",
            name));
        continue;
      }
      out.folders.push_back(name);
      continue;
    }
    auto bytes = read_file(kept[i], kMaxKeptFileBytes);
    if (!bytes) {
      out.notes.push_back("[hpo] output not kept: " + bytes.error().message);
      continue;
    }
    out.artifacts.emplace_back(trials::artifact::kOutputPrefix + name, std::move(*bytes));
  }
}

}  // namespace

Result<std::optional<ensemble::BaggingPlan>> command_member_plan(const trials::Trial& trial,
                                                                 const trials::CommandData& data) {
  if (trial.role != trials::TrialRole::kMember) return std::optional<ensemble::BaggingPlan>{};
  const auto spec = trials::member_spec_of(trial.plan);
  if (!spec)
    return Error{spec.error().code, "ensemble member plan: " + spec.error().message,
                 spec.error().fields};
  return std::optional<ensemble::BaggingPlan>{
      ensemble::plan_member(*spec, data.train_rows, data.features)};
}

Result<CommandOutputs> collect_outputs(const std::string& dir, const trials::CommandData* data,
                                       const ensemble::BaggingPlan* plan) {
  CommandOutputs out;
  std::set<std::string> used;  // file names read as predictions
  if (data) {
    for (const auto& part : kParts)
      if (auto st = collect_predictions(dir, part, *data, plan, out, used); !st) return st.error();
  }
  if (plan) out.artifacts.emplace_back(trials::artifact::kBaggingPlan, plan_summary_json(*plan));

  // Everything else the program left is kept, within bounds.
  keep_other_files(dir, used, out);
  return out;
}

}  // namespace hpo::workers
