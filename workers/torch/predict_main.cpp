// hpo-predict: predicts new data with an exported ensemble directory
// (`hpo export`): manifest.json, spec.json and members/<trial>/model.pt. No
// Redis and no scheduler: everything it needs is in the directory.
//
// Each member is rebuilt from the spec's trial recipe and its own parameters
// (resolve() + build_model(), exactly what trained it), then its weights and the
// preprocessing it was trained with (feature subset, standardisation) come from
// its model.pt. The members' outputs are combined with the manifest's rule and
// weights (ensemble::combiner_for), so the result is the ensemble the sweep
// recorded. Input: a CSV with the training file's feature columns (the target
// column may be present: it is then used to print the accuracy on stderr), or
// IDX images (magic 0x0803).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/text.hpp"
#include "ensemble/manifest.hpp"
#include "trials/artifacts.hpp"
#include "trials/spec/spec.hpp"
#include "workers/torch/dataset.hpp"
#include "workers/torch/model.hpp"

namespace {

namespace fs = std::filesystem;
namespace tt = hpo::workers::torch_trainer;
using namespace hpo;

const char* kUsage =
    "usage: hpo-predict --ensemble DIR INPUT [--output OUT.csv] [--device cpu|cuda]\n"
    "  DIR    an exported ensemble (hpo export): manifest.json, spec.json, members/\n"
    "  INPUT  a CSV with the training data's feature columns, or IDX images\n"
    "  OUT    one line per row: the predicted class and the class probabilities\n"
    "         (classification) or the predicted value (regression); default stdout\n";

struct Failure {
  std::string message;
};

// A file's bytes (gunzipped when it is gzip), or a Failure naming it.
std::string read_file(const fs::path& p) {
  auto bytes = tt::read_maybe_gz(p.string());
  if (!bytes) throw Failure{bytes.error().message};
  return std::move(bytes).value();
}

// Input rows as a flat float matrix; labels when the CSV has the target column.
struct Input {
  std::vector<float> x;
  std::int64_t rows = 0, features = 0;
  std::vector<float> labels;  // empty: no target column, or not numeric
};

// CSV read as training reads it (tt::split_csv, tt::parse_float); the target column may be absent.
Input read_csv_input(const std::string& path, const std::string& text, const std::string& target) {
  std::istringstream in(text);
  std::string line, scratch;
  std::vector<std::string_view> cells;
  if (!std::getline(in, line)) throw Failure{path + ": empty file, expected a CSV header row"};
  tt::split_csv(line, cells, scratch);
  std::vector<std::string> header;
  for (auto c : cells) header.emplace_back(hpo::trim_field(c));
  int target_col = -1;
  for (std::size_t c = 0; c < header.size(); ++c)
    if (header[c] == target) target_col = static_cast<int>(c);
  Input out;
  out.features = static_cast<std::int64_t>(header.size()) - (target_col >= 0 ? 1 : 0);
  bool numeric_labels = true;
  std::int64_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (hpo::trim_field(line).empty()) continue;
    tt::split_csv(line, cells, scratch);
    if (cells.size() != header.size())
      throw Failure{fmt::format("{}:{}: {} fields, the header has {}", path, line_no, cells.size(),
                                header.size())};
    for (std::size_t c = 0; c < cells.size(); ++c) {
      float v = 0;
      const bool ok = tt::parse_float(cells[c], v);
      if (static_cast<int>(c) == target_col) {
        numeric_labels = numeric_labels && ok;
        out.labels.push_back(ok ? v : 0.0f);
        continue;
      }
      if (!ok)
        throw Failure{fmt::format("{}:{}: column '{}' is not a number: '{}'", path, line_no,
                                  header[c], cells[c])};
      out.x.push_back(v);
    }
    ++out.rows;
  }
  if (!numeric_labels) out.labels.clear();
  return out;
}

// IDX images (tt::idx_dims: unsigned bytes, 3 dimensions, exact size), pixels / 255 as in training.
Input read_idx_input(const std::string& path, const std::string& bytes) {
  auto dims = tt::idx_dims(bytes, path, 3);
  if (!dims) throw Failure{dims.error().message + " (IDX inputs are image files)"};
  Input out;
  out.rows = (*dims)[0];
  out.features = (*dims)[1] * (*dims)[2];
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + 16;
  out.x.resize(static_cast<std::size_t>(out.rows * out.features));
  for (std::size_t i = 0; i < out.x.size(); ++i) out.x[i] = p[i] / 255.0f;
  return out;
}

// IDX when the file starts with IDX's two zero bytes, else CSV; either may be gzipped.
Input read_input(const std::string& path, const std::string& target) {
  std::string bytes = read_file(path);
  if (bytes.size() >= 4 && bytes[0] == 0 && bytes[1] == 0) return read_idx_input(path, bytes);
  return read_csv_input(path, bytes, target);
}

std::vector<std::int64_t> longs(const torch::Tensor& t) {
  auto c = t.to(torch::kLong).contiguous();
  return {c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel()};
}

std::vector<float> floats(const torch::Tensor& t) {
  auto c = t.to(torch::kFloat).contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

struct Member {
  torch::nn::Sequential model{nullptr};
  std::vector<std::int64_t> sample_shape, feature_index;
  std::vector<float> mean, inv_std;
  std::int64_t input_features = 0;
};

Member load_member(const trials::SweepSpec& spec, const ensemble::ManifestMember& m,
                   const fs::path& file, bool classification, std::int64_t outputs) {
  Member out;
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(file.string());
  } catch (const std::exception& e) {
    throw Failure{file.string() + ": not a model archive (" + std::string(e.what()).substr(0, 200) +
                  ")"};
  }
  // A fresh tensor per key: reading into a defined tensor set_()s it, keeping its dtype.
  auto read = [&](const char* key, bool required = true) {
    torch::Tensor t;
    if (!archive.try_read(key, t) && required)
      throw Failure{file.string() + ": no " + key + " in the archive (not an hpo model file)"};
    return t;
  };
  out.sample_shape = longs(read("hpo.sample_shape"));
  out.feature_index = longs(read("hpo.feature_index"));
  out.mean = floats(read("hpo.mean"));
  out.inv_std = floats(read("hpo.inv_std"));
  if (auto t = read("hpo.input_features", false); t.defined() && t.numel() == 1)
    out.input_features = longs(t).at(0);
  if (out.input_features <= 0) {  // an archive from before the field: the best we know
    out.input_features = 1;
    if (out.feature_index.empty())
      for (auto d : out.sample_shape) out.input_features *= d;
    else
      out.input_features = out.feature_index.back() + 1;
  }
  auto config = trials::resolve(spec.trial.torch, m.params);
  if (!config) throw Failure{"member " + m.trial_id + ": " + config.error().message};
  auto built = workers::torch_trainer::build_model(config->model, out.sample_shape,
                                                   classification ? outputs : 1);
  if (!built) throw Failure{"member " + m.trial_id + ": " + built.error().message};
  out.model = *built;
  out.model->load(archive);
  out.model->eval();
  return out;
}

// The member's view of the input: its feature subset, standardised, shaped.
torch::Tensor member_input(const Member& m, const Input& in) {
  const std::int64_t f = in.features;
  const auto& idx = m.feature_index;
  const std::int64_t k = idx.empty() ? f : static_cast<std::int64_t>(idx.size());
  std::vector<float> x(static_cast<std::size_t>(in.rows * k));
  for (std::int64_t r = 0; r < in.rows; ++r)
    for (std::int64_t c = 0; c < k; ++c) {
      float v = in.x[r * f + (idx.empty() ? c : idx[c])];
      if (m.mean.size() == 1)
        v = (v - m.mean[0]) * m.inv_std[0];
      else if (!m.mean.empty())
        v = (v - m.mean[c]) * m.inv_std[c];
      x[r * k + c] = v;
    }
  std::vector<std::int64_t> shape{in.rows};
  shape.insert(shape.end(), m.sample_shape.begin(), m.sample_shape.end());
  return torch::tensor(x, torch::kFloat).view(shape);
}

int run(int argc, char** argv) {
  std::string dir, input, output, device_name = "cpu";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw Failure{a + " needs a value"};
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--ensemble")
      dir = next();
    else if (a == "--output" || a == "-o")
      output = next();
    else if (a == "--device")
      device_name = next();
    else if (!a.empty() && a[0] == '-')
      throw Failure{"unknown flag " + a};
    else if (input.empty())
      input = a;
    else
      throw Failure{"one INPUT file only"};
  }
  if (dir.empty() || input.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (device_name != "cpu" && device_name != "cuda")
    throw Failure{"--device is cpu or cuda, not " + device_name};
  if (device_name == "cuda" && !torch::cuda::is_available())
    throw Failure{"--device cuda: this LibTorch has no CUDA device"};
  const torch::Device device(device_name == "cuda" ? torch::kCUDA : torch::kCPU);

  const fs::path root(dir);
  const auto manifest_path = root / trials::artifact::kEnsembleManifest;
  auto manifest = ensemble::manifest_from_json(read_file(manifest_path));
  if (!manifest) throw Failure{manifest_path.string() + ": " + manifest.error().message};
  auto spec = trials::parse_spec(read_file(root / "spec.json"));
  if (!spec) throw Failure{(root / "spec.json").string() + ": " + spec.error().message};
  if (spec->trial.kind != trials::TrialKind::kTorch)
    throw Failure{"the sweep's trials are not of kind torch: nothing hpo-predict can rebuild"};
  if (manifest->members.empty()) throw Failure{"the manifest has no members"};
  const bool classification = manifest->task == ensemble::Targets::Task::kClassification;
  auto base = trials::resolve(spec->trial.torch, manifest->members.front().params);
  if (!base) throw Failure{base.error().message};

  Input in = read_input(input, base->data.target);
  std::vector<Member> members;
  for (const auto& m : manifest->members)
    members.push_back(
        load_member(*spec, m, root / m.artifact, classification, manifest->n_outputs));
  const std::int64_t expected =
      manifest->n_features > 0 ? manifest->n_features : members.front().input_features;
  if (in.features != expected)
    throw Failure{fmt::format(
        "{}: {} feature columns, the ensemble expects {}{}", input, in.features, expected,
        in.labels.empty() && in.features == expected + 1
            ? fmt::format(" (is the target column named other than '{}'?)", base->data.target)
            : "")};

  torch::NoGradGuard no_grad;
  std::vector<ensemble::Matrix> predictions;
  for (auto& m : members) {
    m.model->to(device);
    auto x = member_input(m, in);
    std::vector<torch::Tensor> parts;
    for (std::int64_t s = 0; s < in.rows; s += 1024) {
      auto out =
          m.model->forward(x.narrow(0, s, std::min<std::int64_t>(1024, in.rows - s)).to(device));
      parts.push_back((classification ? torch::softmax(out, 1) : out).cpu());
    }
    auto all = in.rows ? torch::cat(parts).contiguous()
                       : torch::zeros({0, classification ? manifest->n_outputs : 1});
    ensemble::Matrix p(all.size(0), all.size(1));
    std::memcpy(p.data.data(), all.data_ptr<float>(), p.data.size() * sizeof(float));
    predictions.push_back(std::move(p));
  }
  auto combiner = ensemble::combiner_for(*manifest);
  auto combined = ensemble::combine(*combiner, predictions);
  if (!combined) throw Failure{"combining the members: " + combined.error().message};

  std::FILE* f = output.empty() ? stdout : std::fopen(output.c_str(), "w");
  if (!f) throw Failure{"cannot write " + output};
  const auto& m = *combined;
  std::int64_t correct = 0;
  if (classification) {
    std::string head = "class";
    for (std::int64_t c = 0; c < m.cols; ++c) head += fmt::format(",p{}", c);
    std::fprintf(f, "%s\n", head.c_str());
  } else {
    std::fprintf(f, "%s\n", m.cols == 1 ? "value" : "values");
  }
  for (std::int64_t r = 0; r < m.rows; ++r) {
    const float* row = m.data.data() + r * m.cols;
    std::string line;
    if (classification) {
      const int cls = ensemble::argmax(row, m.cols);
      if (!in.labels.empty() && static_cast<float>(cls) == in.labels[r]) ++correct;
      line = std::to_string(cls);
      for (std::int64_t c = 0; c < m.cols; ++c) line += fmt::format(",{:.6g}", row[c]);
    } else {
      for (std::int64_t c = 0; c < m.cols; ++c)
        line += fmt::format("{}{:.8g}", c ? "," : "", row[c]);
    }
    std::fprintf(f, "%s\n", line.c_str());
  }
  if (f != stdout) std::fclose(f);
  if (classification && !in.labels.empty() && m.rows > 0)
    std::fprintf(stderr, "hpo-predict: %lld rows, %zu members, accuracy %.9f\n",
                 static_cast<long long>(m.rows), members.size(),
                 static_cast<double>(correct) / static_cast<double>(m.rows));
  else
    std::fprintf(stderr, "hpo-predict: %lld rows, %zu members\n", static_cast<long long>(m.rows),
                 members.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Failure& e) {
    std::fprintf(stderr, "hpo-predict: %s\n", e.message.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (auto cut = what.find("\nException raised from"); cut != std::string::npos) what.resize(cut);
    std::fprintf(stderr, "hpo-predict: %s\n", what.c_str());
    return 1;
  }
}
