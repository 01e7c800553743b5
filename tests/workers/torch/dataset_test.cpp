#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "tests/workers/torch/test_files.hpp"
#include "workers/torch/dataset.hpp"

namespace hpo::workers::torch_trainer {
namespace {

using testing::TempDir;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(ReadIdx, ReadsPlainAndGzipFiles) {
  TempDir dir;
  for (bool gz : {false, true}) {
    auto images = dir.write(gz ? "i.gz" : "i", testing::idx_images(5, 2, 3), gz);
    auto labels = dir.write(gz ? "l.gz" : "l", testing::idx_labels(5), gz);
    auto t = read_idx(images, labels);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->rows, 5);
    EXPECT_EQ(t->sample_shape, (std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_FLOAT_EQ(t->x[1 * 6 + 2], 3.0f / 255.0f);  // image 1, pixel 2
    EXPECT_FLOAT_EQ(t->y[4], 4.0f);
  }
}

TEST(ReadIdx, ReportsBadFiles) {
  TempDir dir;
  auto labels = dir.write("l", testing::idx_labels(5));
  auto missing = read_idx(dir.file("nope.gz"), labels);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.error().message, "nope.gz")) << missing.error().message;
  EXPECT_TRUE(contains(missing.error().message, "does not exist"));

  auto bad = read_idx(dir.write("csv", "a,b\n1,2\n"), labels);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.error().message, "not an IDX file")) << bad.error().message;

  auto full = testing::idx_images(5, 2, 3);
  auto cut = read_idx(dir.write("cut", full.substr(0, full.size() - 1)), labels);
  ASSERT_FALSE(cut.ok());
  EXPECT_TRUE(contains(cut.error().message, "truncated")) << cut.error().message;

  auto count = read_idx(dir.write("i4", testing::idx_images(4, 2, 3)), labels);
  ASSERT_FALSE(count.ok());
  EXPECT_TRUE(contains(count.error().message, "4 images")) << count.error().message;
}

TEST(ReadCsv, ReadsFeaturesAndTargetAnywhere) {
  TempDir dir;
  auto t = read_csv(dir.write("d.csv", "a,y,b\r\n1,0,2.5\r\n\r\n-3e1,2,\"4\"\r\n"), "y", true);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->rows, 2);
  EXPECT_EQ(t->columns, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(t->x, (std::vector<float>{1, 2.5, -30, 4}));
  EXPECT_EQ(t->y, (std::vector<float>{0, 2}));
}

TEST(ReadCsv, MapsTextLabelsToSortedClasses) {
  TempDir dir;
  auto path = dir.write("d.csv", "x,kind\n1,eel\n2,cat\n3,eel\n");
  auto t = read_csv(path, "kind", true);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->classes, (std::vector<std::string>{"cat", "eel"}));
  EXPECT_EQ(t->y, (std::vector<float>{1, 0, 1}));
  auto other = read_csv(dir.write("v.csv", "x,kind\n1,cat\n2,dog\n"), "kind", true, &t->classes);
  ASSERT_FALSE(other.ok());
  EXPECT_TRUE(contains(other.error().message, "line 3")) << other.error().message;
  EXPECT_FALSE(contains(other.error().message, "dog")) << other.error().message;  // no contents
}

TEST(ReadCsv, ReportsErrorsWithFileLineAndColumn) {
  TempDir dir;
  auto missing = read_csv(dir.file("none.csv"), "y", true);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.error().message, "none.csv"));

  auto no_target = read_csv(dir.write("a.csv", "a,b\n1,2\n"), "label", true);
  ASSERT_FALSE(no_target.ok());
  EXPECT_TRUE(contains(no_target.error().message, "no column 'label'"))
      << no_target.error().message;

  auto text = read_csv(dir.write("b.csv", "a,y\n1,0\n2,0\nthree,1\n"), "y", true);
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(contains(text.error().message, "line 4")) << text.error().message;
  EXPECT_TRUE(contains(text.error().message, "column 'a'")) << text.error().message;

  auto ragged = read_csv(dir.write("c.csv", "a,y\n1,0\n2\n"), "y", true);
  ASSERT_FALSE(ragged.ok());
  EXPECT_TRUE(contains(ragged.error().message, "line 3")) << ragged.error().message;

  auto regression = read_csv(dir.write("d.csv", "a,y\n1,big\n"), "y", false);
  ASSERT_FALSE(regression.ok());
  EXPECT_TRUE(contains(regression.error().message, "not a number")) << regression.error().message;

  EXPECT_FALSE(read_csv(dir.write("e.csv", ""), "y", true).ok());
  EXPECT_FALSE(read_csv(dir.write("f.csv", "a,y\n"), "y", true).ok());
}

trials::ResolvedData csv_data(const std::string& train) {
  trials::ResolvedData d;
  d.format = "csv";
  d.train = train;
  d.target = "label";
  d.validation_fraction = 0.25;
  return d;
}

TEST(PrepareData, SplitsBySeedAndStandardisesOnTheTrainingPart) {
  TempDir dir;
  DatasetCache cache;
  auto d = csv_data(dir.write("t.csv", testing::blobs_csv(200, 1)));
  auto a = prepare_data(d, trials::TorchTask::kClassification, cache);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->validation.rows, 50);
  EXPECT_EQ(a->train.rows, 150);
  EXPECT_EQ(a->num_classes, 3);
  // Train and validation rows partition the file.
  std::vector<std::int64_t> all = a->train.row_ids;
  all.insert(all.end(), a->validation.row_ids.begin(), a->validation.row_ids.end());
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> expect(200);
  std::iota(expect.begin(), expect.end(), 0);
  EXPECT_EQ(all, expect);
  // Each training column has mean 0 and std 1 (not the validation part's).
  for (int c = 0; c < 4; ++c) {
    double s = 0, sq = 0;
    for (std::int64_t r = 0; r < a->train.rows; ++r) {
      double v = a->train.x[r * 4 + c];
      s += v;
      sq += v * v;
    }
    EXPECT_NEAR(s / a->train.rows, 0, 1e-4);
    EXPECT_NEAR(sq / a->train.rows, 1, 1e-3);
  }
  // Same seed: same split (and the file was read once); another seed: another split.
  auto b = prepare_data(d, trials::TorchTask::kClassification, cache);
  EXPECT_EQ(b->validation.row_ids, a->validation.row_ids);
  EXPECT_EQ(cache.loads(), 1u);
  d.seed = 5;
  auto c = prepare_data(d, trials::TorchTask::kClassification, cache);
  EXPECT_NE(c->validation.row_ids, a->validation.row_ids);
  // The split is spelled out (Fisher-Yates over ensemble::Rng), not std::shuffle's
  // implementation-defined order: these rows were computed by an independent Python
  // port of the same draws, and must come out the same with any standard library.
  const std::vector<std::int64_t> first0{1, 2, 3, 16, 18, 20, 21, 33, 39, 42};
  const std::vector<std::int64_t> first5{1, 2, 8, 10, 11, 24, 26, 29, 30, 31};
  EXPECT_EQ(
      std::vector<std::int64_t>(a->validation.row_ids.begin(), a->validation.row_ids.begin() + 10),
      first0);
  EXPECT_EQ(
      std::vector<std::int64_t>(c->validation.row_ids.begin(), c->validation.row_ids.begin() + 10),
      first5);
}

TEST(PrepareData, SubsetTakesTheFirstRowsAndFilesGiveValidationAndTest) {
  TempDir dir;
  DatasetCache cache;
  auto d = csv_data(dir.write("t.csv", testing::blobs_csv(200, 1, true)));
  d.subset = 40;
  d.validation = dir.write("v.csv", testing::blobs_csv(30, 2, true));
  d.test = dir.write("x.csv", testing::blobs_csv(20, 3, true));
  auto p = prepare_data(d, trials::TorchTask::kClassification, cache);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->train.rows, 40);
  EXPECT_EQ(p->train.row_ids.back(), 39);
  EXPECT_EQ(p->validation.rows, 30);
  EXPECT_TRUE(p->has_test);
  EXPECT_EQ(p->test.rows, 20);
  EXPECT_EQ(p->num_classes, 3);
}

TEST(PrepareData, GatherAndSelectFeatures) {
  TempDir dir;
  DatasetCache cache;
  auto p = prepare_data(csv_data(dir.write("t.csv", testing::blobs_csv(40, 1))),
                        trials::TorchTask::kClassification, cache);
  ASSERT_TRUE(p.ok());
  auto g = gather(p->train, {2, 2, 0});
  EXPECT_EQ(g.rows, 3);
  EXPECT_EQ(g.row_ids[0], p->train.row_ids[2]);
  EXPECT_EQ(g.row_ids[1], p->train.row_ids[2]);
  EXPECT_FLOAT_EQ(g.x[4 + 3], p->train.x[2 * 4 + 3]);
  auto before = p->validation.x;
  select_features(*p, {1, 3});
  EXPECT_EQ(p->sample_shape, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(p->mean.size(), 2u);
  EXPECT_FLOAT_EQ(p->validation.x[1], before[3]);
  EXPECT_FLOAT_EQ(p->validation.x[2], before[4 + 1]);
}

// Errors name the file, line and column, never the file's contents: a path
// that names some other file (a password file) must not leak it.
TEST(ReadCsv, ErrorsNeverQuoteTheFilesContents) {
  TempDir dir;
  auto secret =
      read_csv(dir.write("s.csv", "root:x:0:0:secret-hash-123:/root:/bin/sh\n"), "y", true);
  ASSERT_FALSE(secret.ok());
  EXPECT_EQ(secret.error().message.find("secret-hash-123"), std::string::npos)
      << secret.error().message;
  EXPECT_NE(secret.error().message.find("no column 'y'"), std::string::npos);
  auto value = read_csv(dir.write("v.csv", "a,y\nsecret-value-456,1\n"), "y", true);
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.error().message.find("secret-value-456"), std::string::npos);
  EXPECT_NE(value.error().message.find("line 2"), std::string::npos) << value.error().message;
}

// On the worker the files themselves are checked: a relative path is found
// under a root, a symlink out of a root is refused, and a path outside every
// root is refused with the same words whether or not the file exists.
void expect_same_table(const Table& a, const Table& b) {
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.sample_shape, b.sample_shape);
  EXPECT_EQ(a.columns, b.columns);
  EXPECT_EQ(a.classes, b.classes);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.x, b.x);  // bit for bit: the trainer must see the same floats
}

TEST(TableFile, RoundTripsPixelsAsBytesAndOtherFeaturesAsFloats) {
  TempDir dir;
  auto pixels = read_idx(dir.write("i", testing::idx_images(50, 10, 10)),
                         dir.write("l", testing::idx_labels(50)));
  ASSERT_TRUE(pixels.ok());
  auto csv = read_csv(dir.write("t.csv", testing::blobs_csv(30, 3, true)), "label", true);
  ASSERT_TRUE(csv.ok()) << csv.error().message;
  for (const Table* t : {&*pixels, &*csv}) {
    auto bytes = encode_table(*t);
    auto back = decode_table(bytes);
    ASSERT_TRUE(back.ok()) << back.error().message;
    expect_same_table(*t, *back);
  }
  // An empty table too (its vectors' data() may be null: no copy from or to them).
  Table empty;
  empty.sample_shape = {3};
  auto none = decode_table(encode_table(empty));
  ASSERT_TRUE(none.ok()) << none.error().message;
  expect_same_table(empty, *none);
  // Pixels take a byte each, other features four.
  EXPECT_LT(encode_table(*pixels).size(), pixels->x.size() * 2);
  EXPECT_GE(encode_table(*csv).size(), csv->x.size() * 4);
  EXPECT_FALSE(csv->classes.empty());
}

TEST(TableFile, TruncatedOrForeignBytesAreErrorsNotReads) {
  TempDir dir;
  auto t = read_csv(dir.write("t.csv", testing::blobs_csv(20, 1)), "label", true);
  ASSERT_TRUE(t.ok());
  const std::string bytes = encode_table(*t);
  for (std::size_t cut :
       {std::size_t{0}, std::size_t{5}, std::size_t{40}, bytes.size() / 2, bytes.size() - 1})
    EXPECT_FALSE(decode_table(std::string_view(bytes).substr(0, cut)).ok()) << cut;
  EXPECT_FALSE(decode_table(bytes + "x").ok());
  std::string lying = bytes;
  lying[std::string("HPO-TABLE\n").size() + 8] = '\x7f';  // rows: a huge count
  EXPECT_FALSE(decode_table(lying).ok());
  EXPECT_FALSE(decode_table("not a table at all").ok());
}

TEST(DatasetCache, ADecodedTableIsReadBackFromDiskByAnotherCache) {
  TempDir dir;
  const std::string cache_dir = dir.file("cache");
  auto d = csv_data(dir.write("t.csv", testing::blobs_csv(120, 4)));
  DatasetCache first(8, cache_dir);
  auto a = prepare_data(d, trials::TorchTask::kClassification, first);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(first.loads(), 1u);
  EXPECT_EQ(first.disk_reads(), 0u);
  ASSERT_EQ(std::distance(std::filesystem::directory_iterator(cache_dir),
                          std::filesystem::directory_iterator{}),
            1);
  // Another process (a rank, the next worker) reads the file, not the CSV.
  DatasetCache second(8, cache_dir);
  auto b = prepare_data(d, trials::TorchTask::kClassification, second);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(second.loads(), 0u);
  EXPECT_EQ(second.disk_reads(), 1u);
  EXPECT_EQ(a->train.x, b->train.x);
  EXPECT_EQ(a->validation.row_ids, b->validation.row_ids);
  // Without a disk dir nothing is read from or written to disk.
  DatasetCache none;
  ASSERT_TRUE(prepare_data(d, trials::TorchTask::kClassification, none).ok());
  EXPECT_EQ(none.loads(), 1u);
  EXPECT_EQ(none.disk_reads(), 0u);
}

TEST(DatasetCache, AChangedSourceOrABrokenFileIsDecodedAgain) {
  TempDir dir;
  const std::string cache_dir = dir.file("cache");
  const std::string csv = dir.write("t.csv", testing::blobs_csv(60, 5));
  auto d = csv_data(csv);
  {
    DatasetCache c(8, cache_dir);
    ASSERT_TRUE(prepare_data(d, trials::TorchTask::kClassification, c).ok());
  }
  // The file changes (more rows): its size and time change, so does the cache file's name.
  dir.write("t.csv", testing::blobs_csv(90, 5));
  {
    DatasetCache c(8, cache_dir);
    auto p = prepare_data(d, trials::TorchTask::kClassification, c);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(c.loads(), 1u);
    EXPECT_EQ(c.disk_reads(), 0u);
    EXPECT_EQ(p->train.rows + p->validation.rows, 90);
  }
  // Every cache file truncated: decoded from the CSV again, and the file replaced.
  for (const auto& e : std::filesystem::directory_iterator(cache_dir))
    std::filesystem::resize_file(e.path(), 30);
  {
    DatasetCache c(8, cache_dir);
    auto p = prepare_data(d, trials::TorchTask::kClassification, c);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(c.loads(), 1u);
    EXPECT_EQ(p->train.rows + p->validation.rows, 90);
  }
  DatasetCache c(8, cache_dir);
  ASSERT_TRUE(prepare_data(d, trials::TorchTask::kClassification, c).ok());
  EXPECT_EQ(c.disk_reads(), 1u);  // the replaced file reads back
}

TEST(ConfineDataPaths, FindsRelativePathsAndRefusesEscapes) {
  TempDir root, other;
  const std::string inside = root.write("train.csv", "a,y\n1,0\n");
  const std::string secret = other.write("secret.csv", "k,y\n1,0\n");
  std::filesystem::create_symlink(secret, root.file("link.csv"));
  const std::vector<std::string> roots = {"/nonexistent-root", root.file("")};

  trials::ResolvedData d;
  d.train = "train.csv";
  ASSERT_TRUE(confine_data_paths(d, roots).ok());
  EXPECT_EQ(d.train, std::filesystem::canonical(inside).string());

  d.train = root.file("link.csv");
  auto st = confine_data_paths(d, roots);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().fields.at(0).path, "trial.data.train");
  EXPECT_TRUE(contains(st.error().message, "outside the data roots"));

  d.train = secret;  // exists, outside
  auto exists = confine_data_paths(d, roots);
  d.train = other.file("missing.csv");  // does not exist, outside
  auto missing = confine_data_paths(d, roots);
  ASSERT_FALSE(exists.ok());
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(exists.error().message, "outside the data roots"));
  EXPECT_TRUE(contains(missing.error().message, "outside the data roots"));

  d.train = "../" + std::filesystem::path(other.file("")).parent_path().filename().string() +
            "/secret.csv";
  EXPECT_FALSE(confine_data_paths(d, roots).ok());
  d.train = "nope.csv";
  auto absent = confine_data_paths(d, roots);
  ASSERT_FALSE(absent.ok());
  EXPECT_TRUE(contains(absent.error().message, "does not exist under the data roots"));
  d.train = secret;
  EXPECT_TRUE(confine_data_paths(d, {}).ok());  // no roots: nothing confined
}

}  // namespace
}  // namespace hpo::workers::torch_trainer
