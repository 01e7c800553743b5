// Datasets of the built-in trainer: IDX (MNIST layout, .gz or not) and CSV
// files read into plain float matrices, then split, subset and standardised
// for one trial. No LibTorch here: the trainer wraps the matrices in tensors
// without copying, and these functions stay fast to compile and to test.
//
// Loading is cached per process (DatasetCache) keyed by the file paths, so a
// worker running many trials on the same data reads it once; everything that
// depends on the trial (subset, split, standardisation, bagging) is applied to
// a copy, so cached tables are immutable and shared between slots.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "trials/spec/recipe/torch_recipe.hpp"

namespace hpo::workers::torch_trainer {

// Rows of samples as loaded from files.
struct Table {
  std::vector<float> x;                    // rows × features, row-major
  std::vector<float> y;                    // one target per row: class index or value
  std::vector<std::int64_t> sample_shape;  // {features} (csv) or {1, h, w} (idx)
  std::int64_t rows = 0;
  std::vector<std::string> columns;  // csv: feature column names
  std::vector<std::string> classes;  // csv classification with text labels, sorted
  std::int64_t features() const;
};

// The readers' building blocks, also used by hpo-predict so that prediction reads a file
// exactly as training did.
// Whole file, gunzipped when it is gzip (plain files pass through).
Result<std::string> read_maybe_gz(const std::string& path);
// An IDX file's sizes (unsigned bytes, `want_dims` dimensions, no missing or extra bytes).
Result<std::vector<std::int64_t>> idx_dims(const std::string& bytes, const std::string& path,
                                           int want_dims);
// One CSV line (RFC 4180 quotes, no embedded newlines) into `out`; quoted fields are
// unescaped into `scratch`, which the views may point into.
void split_csv(std::string_view line, std::vector<std::string_view>& out, std::string& scratch);
bool parse_float(std::string_view s, float& out);  // finite numbers only, after hpo::trim_field()

// IDX image + label files (magic 0x0803 / 0x0801, unsigned bytes), pixels / 255.
Result<Table> read_idx(const std::string& images_path, const std::string& labels_path);

// The same from bytes already read (`*_path` names them in errors): the fuzz
// targets drive these directly.
Result<Table> parse_idx(const std::string& images, const std::string& labels,
                        const std::string& images_path, const std::string& labels_path);

// CSV with a header row; `target` names the target column, every other column
// must be numeric. Classification targets are non-negative integers or text
// labels; text labels map to indices in `classes` (sorted), and when `classes`
// is given (the training file's) a label outside it is an error.
Result<Table> read_csv(const std::string& path, const std::string& target, bool classification,
                       const std::vector<std::string>* classes = nullptr);
Result<Table> parse_csv(std::string_view text, const std::string& path, const std::string& target,
                        bool classification, const std::vector<std::string>* classes = nullptr);

// One part of the data, ready for training.
struct Split {
  std::vector<float> x;
  std::vector<float> y;
  std::vector<std::int64_t> row_ids;  // row numbers in the source file (0-based)
  std::int64_t rows = 0;
};

struct PreparedData {
  Split train, validation, test;
  bool has_test = false;
  // Ensemble members: the training rows the bootstrap did not draw, predicted for
  // the out-of-bag estimate (row_ids = indices into the full training part).
  Split oob;
  bool has_oob = false;
  std::vector<std::int64_t> sample_shape;
  std::int64_t num_classes = 0;  // classification: max label + 1 over all parts
  // Standardisation fitted on the training part: x' = (x - mean) * inv_std, one
  // value per feature (csv) or one for all pixels (idx); empty when off.
  std::vector<float> mean, inv_std;
};

// A table as bytes and back, for the on-disk cache: a header (magic, version,
// rows, shape, names), then the targets as floats and the features as floats,
// or as bytes when every feature is a whole number of 255ths (IDX pixels, read
// back with the reader's own /255: the same floats), a quarter of the size.
// decode_table checks every size against the bytes it has (a truncated or
// foreign file is an error, never a read past the end).
std::string encode_table(const Table& table);
Result<Table> decode_table(std::string_view bytes);

// Loaded tables, shared by the trials of a worker process. Thread-safe.
//
// With a `disk_dir`, each table decoded from its source files is also written
// there (one file per table, named by a hash of the key and each source file's
// size and modification time, written to a temporary name and renamed), and a
// table missing from memory is read back from there before its sources: the
// rank processes of a worker's trials, and the next worker process on the
// host, decode a dataset once (gunzip and parse) instead of once each. A file
// that does not decode is replaced. Nothing is ever deleted from the directory.
class DatasetCache {
 public:
  explicit DatasetCache(std::size_t max_entries = 8, std::string disk_dir = {})
      : max_entries_(max_entries), disk_dir_(std::move(disk_dir)) {}
  // Returns the cached table for `key`, or reads it from the disk cache, or
  // loads it with `load` (outside the lock: two slots asking at once may both
  // read the file; the first one is kept). `sources`: the files `load` reads.
  template <class Load>
  Result<std::shared_ptr<const Table>> get(const std::string& key,
                                           const std::vector<std::string>& sources, Load&& load);
  std::size_t loads() const;       // how many times a table was read from its source files
  std::size_t disk_reads() const;  // how many times from the disk cache
  const std::string& disk_dir() const { return disk_dir_; }

 private:
  std::shared_ptr<const Table> find(const std::string& key);
  std::shared_ptr<const Table> insert(const std::string& key, Table table, bool from_disk);
  // The disk cache's file for (key, sources); empty without a disk_dir or
  // when a source cannot be stat'ed.
  std::string disk_path(const std::string& key, const std::vector<std::string>& sources) const;
  std::optional<Table> read_disk(const std::string& path) const;
  void write_disk(const std::string& path, const Table& table) const;

  mutable std::mutex mu_;
  std::size_t max_entries_;
  std::string disk_dir_;
  std::size_t loads_ = 0;
  std::size_t disk_reads_ = 0;
  std::list<std::pair<std::string, std::shared_ptr<const Table>>> entries_;  // most recent first
};

// Confines the data paths of `data` to `roots` (trials/data_roots.hpp): a
// relative path is looked up under each root in turn and rewritten to the
// first that has it; every file, symlinks resolved, must lie under a root (also
// resolved). kInvalidArgument at "trial.data.<field>" naming the path and the
// roots, never the file's contents. `roots` empty: nothing is confined.
Status confine_data_paths(trials::ResolvedData& data, const std::vector<std::string>& roots);

// Loads (through `cache`), then applies subset, the validation split (seeded by
// data.seed, so every trial and ensemble member sees the same validation rows)
// and standardisation fitted on the training part.
Result<PreparedData> prepare_data(const trials::ResolvedData& data, trials::TorchTask task,
                                  DatasetCache& cache);

// The rows `rows` of `split` (repeats allowed: bootstrap samples).
Split gather(const Split& split, const std::vector<std::int64_t>& rows);

// Keeps only the feature columns `columns` (ascending) in every part: a random
// feature subspace of an ensemble member. Only for tabular data (sample_shape {f}).
void select_features(PreparedData& data, const std::vector<std::int64_t>& columns);

template <class Load>
Result<std::shared_ptr<const Table>> DatasetCache::get(const std::string& key,
                                                       const std::vector<std::string>& sources,
                                                       Load&& load) {
  if (auto hit = find(key)) return hit;
  const std::string path = disk_path(key, sources);
  if (!path.empty())
    if (auto stored = read_disk(path)) return insert(key, std::move(*stored), true);
  Result<Table> table = load();
  if (!table) return table.error();
  if (!path.empty()) write_disk(path, *table);
  return insert(key, std::move(table).value(), false);
}

}  // namespace hpo::workers::torch_trainer
