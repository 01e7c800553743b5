// The ensemble stage's reading of stored predictions (see
// ensemble_predictions.hpp): moved out of ensemble_stage.cpp so that the
// stage's steps and the block-at-a-time readers each stay readable on their own.
#include "scheduler/ensemble_predictions.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "trials/artifacts.hpp"

namespace hpo::scheduler::ensemble_predictions {

Result<std::optional<ensemble::PredictionFileReader>> open_predictions(SweepRoles store,
                                                                       const std::string& trial_id,
                                                                       const std::string& name) {
  using Opened = std::optional<ensemble::PredictionFileReader>;
  auto size = store.artifacts.artifact_size(trial_id, name);
  if (!size) return size.error();
  if (!*size || **size == 0) return Opened{};
  // The reader outlives this call: it holds the artifacts role (the connection's), not `store`.
  ensemble::ReadAt read = [&artifacts = store.artifacts, trial_id, name](
                              std::int64_t offset, std::int64_t n, char* out) -> Status {
    auto got = artifacts.read_artifact_range(trial_id, name, offset, n, out);
    if (!got) return got.error();
    if (!*got) return Error::unavailable(name + " of trial " + trial_id + " is gone");
    return {};
  };
  auto reader =
      ensemble::PredictionFileReader::open(std::move(read), **size, name + " of trial " + trial_id);
  if (!reader) return reader.error();
  return Opened{std::move(*reader)};
}

Result<std::optional<ensemble::PredictionFile>> load_predictions(SweepRoles store,
                                                                 const std::string& trial_id,
                                                                 const std::string& name) {
  auto reader = open_predictions(store, trial_id, name);
  if (!reader) return reader.error();
  if (!*reader) return std::optional<ensemble::PredictionFile>{};
  auto file = (*reader)->read_all();
  if (!file) return file.error();
  return std::optional<ensemble::PredictionFile>{std::move(*file)};
}

namespace {

// Every model's test predictions, kStreamRows rows at a time; a block whose
// rows differ from the first model's is an error naming both trials.
class StreamedTestRows final : public ensemble::RowBlocks {
 public:
  explicit StreamedTestRows(const std::vector<Model>& models) : models_(models) {}
  Result<bool> next(std::vector<ensemble::Matrix>& out, ensemble::Targets& targets) override {
    const auto& first = *models_.front().test;
    if (next_ >= first.rows()) return false;
    out.resize(models_.size());
    for (std::size_t i = 0; i < models_.size(); ++i) {
      auto& labels = i == 0 ? labels_ : other_labels_;
      auto& ids = i == 0 ? ids_ : other_ids_;
      if (auto st = models_[i].test->read_rows(next_, kStreamRows, out[i], &labels, &ids); !st)
        return st.error();
      if (i > 0 && (labels != labels_ || ids != ids_))
        return Error::invalid(
            "test_predictions",
            fmt::format("the test predictions of trial {} are not on the same rows as trial {}'s "
                        "(rows {} to {})",
                        models_[i].trial->id, models_.front().trial->id, next_,
                        next_ + static_cast<std::int64_t>(ids_.size())));
    }
    targets = ensemble::targets_of(first.regression(), labels_);
    next_ += out.front().rows;
    return true;
  }

 private:
  const std::vector<Model>& models_;
  std::int64_t next_ = 0;
  std::vector<float> labels_, other_labels_;
  std::vector<std::int64_t> ids_, other_ids_;
};

// The members' out-of-bag predictions (rows = their plan's out-of-bag
// training rows, ascending), a range of kStreamRows training rows at a time:
// each member's file is read forward once, a block of its rows at a time.
class StreamedOob final : public ensemble::OobBlocks {
 public:
  StreamedOob(std::vector<ensemble::PredictionFileReader> files, std::vector<std::string> trials)
      : trials_(std::move(trials)) {
    for (auto& f : files) cursors_.push_back(Cursor{std::move(f)});
  }
  Result<bool> next(std::vector<ensemble::MemberOob>& members,
                    ensemble::Targets& targets) override {
    members.clear();
    std::int64_t first = -1;
    for (auto& c : cursors_) {
      if (auto st = fill(c); !st) return st.error();
      if (c.pos < c.ids.size() && (first < 0 || c.ids[c.pos] < first)) first = c.ids[c.pos];
    }
    if (first < 0) return false;
    const std::int64_t end = first + kStreamRows;
    std::vector<float> labels(static_cast<std::size_t>(kStreamRows), 0.0f);
    std::int64_t highest = first;
    for (std::size_t i = 0; i < cursors_.size(); ++i) {
      Cursor& c = cursors_[i];
      ensemble::MemberOob m;
      m.member = static_cast<int>(i);
      m.predictions = ensemble::Matrix(0, c.file.cols());
      for (;;) {
        if (auto st = fill(c); !st) return st.error();
        if (c.pos == c.ids.size() || c.ids[c.pos] >= end) break;
        const std::int64_t id = c.ids[c.pos];
        if (id < 0 || id <= c.last)
          return Error::invalid(
              "oob_predictions",
              fmt::format("the out-of-bag predictions of trial {} are not in ascending training "
                          "row order (row {} after {})",
                          trials_[i], id, c.last));
        c.last = id;
        m.rows.push_back(id - first);
        const float* row = c.values.row(static_cast<std::int64_t>(c.pos));
        m.predictions.data.insert(m.predictions.data.end(), row, row + c.file.cols());
        ++m.predictions.rows;
        labels[static_cast<std::size_t>(id - first)] = c.labels[c.pos];
        highest = std::max(highest, id);
        ++c.pos;
      }
      if (!m.rows.empty()) members.push_back(std::move(m));
    }
    labels.resize(static_cast<std::size_t>(highest - first + 1));
    targets = ensemble::targets_of(cursors_.front().file.regression(), labels);
    total_ = std::max(total_, highest + 1);
    return true;
  }
  std::int64_t rows_total() const override { return total_; }

 private:
  struct Cursor {
    ensemble::PredictionFileReader file;
    std::int64_t next_row = 0;  // the file's next row to read
    ensemble::Matrix values;    // the block read, from row pos on not yet used
    std::vector<float> labels;
    std::vector<std::int64_t> ids;
    std::size_t pos = 0;
    std::int64_t last = -1;  // the last training row taken
  };
  static Status fill(Cursor& c) {
    if (c.pos < c.ids.size() || c.next_row >= c.file.rows()) return {};
    if (auto st = c.file.read_rows(c.next_row, kStreamRows, c.values, &c.labels, &c.ids); !st)
      return st;
    c.next_row += c.values.rows;
    c.pos = 0;
    return {};
  }
  std::vector<Cursor> cursors_;
  std::vector<std::string> trials_;
  std::int64_t total_ = 0;
};

}  // namespace

std::unique_ptr<ensemble::RowBlocks> stream_test_rows(const std::vector<Model>& models) {
  return std::make_unique<StreamedTestRows>(models);
}

Result<std::unique_ptr<ensemble::OobBlocks>> open_oob(SweepRoles store,
                                                      const std::vector<Model>& models,
                                                      std::size_t member_models, bool regression,
                                                      std::int64_t cols) {
  std::vector<ensemble::PredictionFileReader> files;
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < member_models; ++i) {
    auto f = open_predictions(store, models[i].trial->id, trials::artifact::kOobPredictions);
    if (!f) return f.error();
    if (!*f || (*f)->regression() != regression || (*f)->cols() != cols)
      return std::unique_ptr<ensemble::OobBlocks>{};
    files.push_back(std::move(**f));
    ids.push_back(models[i].trial->id);
  }
  return std::unique_ptr<ensemble::OobBlocks>{
      std::make_unique<StreamedOob>(std::move(files), std::move(ids))};
}

}  // namespace hpo::scheduler::ensemble_predictions
