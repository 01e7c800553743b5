// The torch recipe's resolution: the value of each field for one trial (its
// literal, or the parameter it names, converted) and every value check on it.
// resolve() runs them on a trial's parameters, the parser on the literals alone
// (literal_errors); apart from the parser because it reads parameters, not JSON.
#include "trials/spec/recipe/torch_resolve.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "trials/spec/recipe/torch_recipe.hpp"

namespace hpo::trials {
namespace {

using torch_resolve::type_name;

std::optional<std::int64_t> to_int(const search::Value& v) {
  if (auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (auto* d = std::get_if<double>(&v))
    if (std::floor(*d) == *d && std::abs(*d) < 9e15) return static_cast<std::int64_t>(*d);
  if (auto* s = std::get_if<std::string>(&v)) {
    std::int64_t out = 0;
    std::istringstream in(*s);
    if (in >> out && in.eof()) return out;
  }
  return std::nullopt;
}
std::optional<double> to_double(const search::Value& v) {
  if (auto d = search::as_double(v); d && !std::holds_alternative<bool>(v)) return d;
  if (auto* s = std::get_if<std::string>(&v)) {
    double out = 0;
    std::istringstream in(*s);
    if (in >> out && in.eof()) return out;
  }
  return std::nullopt;
}
std::optional<bool> to_bool(const search::Value& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b;
  if (auto* s = std::get_if<std::string>(&v)) {
    if (*s == "true") return true;
    if (*s == "false") return false;
  }
  if (auto* i = std::get_if<std::int64_t>(&v); i && (*i == 0 || *i == 1)) return *i == 1;
  return std::nullopt;
}
template <class T>
std::optional<T> convert(const search::Value& v) {
  if constexpr (std::is_same_v<T, std::int64_t>) return to_int(v);
  if constexpr (std::is_same_v<T, double>) return to_double(v);
  if constexpr (std::is_same_v<T, bool>) return to_bool(v);
  if constexpr (std::is_same_v<T, std::string>) return search::to_string(v);
}

// "32,64", "32-64", "32x64", "32 64" -> {32, 64}
std::optional<std::vector<std::int64_t>> parse_int_list(const std::string& s) {
  std::vector<std::int64_t> out;
  std::string cur;
  auto flush = [&]() -> bool {
    if (cur.empty()) return true;
    std::int64_t v = 0;
    std::istringstream in(cur);
    if (!(in >> v) || !in.eof()) return false;
    out.push_back(v);
    cur.clear();
    return true;
  };
  for (char c : s) {
    if (c == ',' || c == '-' || c == 'x' || c == ' ' || c == '_') {
      if (!flush()) return std::nullopt;
    } else {
      cur += c;
    }
  }
  if (!flush()) return std::nullopt;
  return out;
}

class Resolver {
 public:
  // params == nullptr: parse time; references keep their defaults, unchecked.
  Resolver(const search::Params* params, std::string prefix)
      : params_(params), prefix_(std::move(prefix)) {}

  template <class T>
  T get(const Sweepable<T>& f, const std::string& path) {
    if (!f.is_ref()) return f.value;
    if (!params_) {
      skipped_.insert(path);
      return f.value;
    }
    auto it = params_->find(f.ref);
    if (it == params_->end()) {
      add(path, "parameter '" + f.ref + "' is not set for this trial");
      skipped_.insert(path);
      return f.value;
    }
    auto v = convert<T>(it->second);
    if (!v) {
      add(path, "parameter '" + f.ref + "' = " + search::to_string(it->second) + " is not " +
                    type_name<T>());
      skipped_.insert(path);
      return f.value;
    }
    return *v;
  }

  std::vector<std::int64_t> get(const SweepableIntList& f, const std::string& path) {
    if (f.ref.empty()) {
      std::vector<std::int64_t> out;
      for (std::size_t i = 0; i < f.items.size(); ++i)
        out.push_back(get(f.items[i], path + "[" + std::to_string(i) + "]"));
      if (std::any_of(f.items.begin(), f.items.end(), [](auto& i) { return i.is_ref(); }) &&
          !params_)
        skipped_.insert(path);
      return out;
    }
    if (!params_) {
      skipped_.insert(path);
      return {1};
    }
    auto it = params_->find(f.ref);
    if (it == params_->end()) {
      add(path, "parameter '" + f.ref + "' is not set for this trial");
      return {1};
    }
    if (auto one = to_int(it->second)) return {*one};
    if (auto* s = std::get_if<std::string>(&it->second))
      if (auto list = parse_int_list(*s)) return *list;
    add(path, "parameter '" + f.ref + "' = " + search::to_string(it->second) +
                  " is not a list of integers (\"32,64\")");
    return {1};
  }

  // A value check on `path`; silent when the field was a reference at parse time.
  void check(bool ok, const std::string& path, const std::string& message) {
    if (!ok && !skipped_.count(path)) add(path, message);
  }

  template <class E>
  E choose(const std::string& value, const std::string& path,
           std::initializer_list<std::pair<const char*, E>> choices) {
    std::string names;
    for (const auto& [name, e] : choices) {
      if (value == name) return e;
      names += names.empty() ? "" : ", ";
      names += name;
    }
    check(false, path, "'" + value + "' is not one of: " + names);
    return choices.begin()->second;
  }

  const std::string& prefix() const { return prefix_; }
  std::vector<FieldError>& errors() { return errors_; }
  // Whether a field under `path` was a reference left unresolved (parse time).
  bool skipped_under(const std::string& path) const {
    return std::any_of(skipped_.begin(), skipped_.end(),
                       [&](const std::string& s) { return s.rfind(path, 0) == 0; });
  }

 private:
  void add(const std::string& path, std::string message) {
    errors_.push_back({path, std::move(message)});
  }

  const search::Params* params_;
  std::string prefix_;
  std::set<std::string> skipped_;
  std::vector<FieldError> errors_;
};

void resolve_model(const TorchModelRecipe& m, Resolver& r, ResolvedModel& out) {
  const std::string p = r.prefix() + ".model";
  out.type = r.choose<ModelType>(r.get(m.type, p + ".type"), p + ".type",
                                 {{"mlp", ModelType::kMlp}, {"cnn", ModelType::kCnn}});
  out.activation = r.choose<Activation>(r.get(m.activation, p + ".activation"), p + ".activation",
                                        {{"relu", Activation::kRelu},
                                         {"tanh", Activation::kTanh},
                                         {"gelu", Activation::kGelu},
                                         {"leaky_relu", Activation::kLeakyRelu},
                                         {"elu", Activation::kElu},
                                         {"silu", Activation::kSilu}});
  out.dropout = r.get(m.dropout, p + ".dropout");
  r.check(out.dropout >= 0 && out.dropout < 1, p + ".dropout", "must be in [0, 1)");
  out.batch_norm = r.get(m.batch_norm, p + ".batch_norm");

  auto check_widths = [&](const std::vector<std::int64_t>& v, const std::string& path) {
    for (auto w : v) r.check(w >= 1 && w <= 65536, path, "widths must be in [1, 65536]");
  };
  if (out.type == ModelType::kMlp) {
    if (!m.layers.items.empty() || !m.layers.ref.empty()) {
      out.layers = r.get(m.layers, p + ".layers");
      check_widths(out.layers, p + ".layers");
    } else {
      std::int64_t hidden = r.get(m.hidden, p + ".hidden");
      std::int64_t depth = r.get(m.depth, p + ".depth");
      r.check(hidden >= 1 && hidden <= 65536, p + ".hidden", "must be in [1, 65536]");
      r.check(depth >= 0 && depth <= 64, p + ".depth", "must be in [0, 64]");
      if (hidden >= 1 && depth >= 0 && depth <= 64) out.layers.assign(depth, hidden);
    }
  } else {
    out.channels = r.get(m.channels, p + ".channels");
    r.check(!out.channels.empty(), p + ".channels", "needs at least one conv block");
    check_widths(out.channels, p + ".channels");
    out.kernel = r.get(m.kernel, p + ".kernel");
    r.check(out.kernel >= 1 && out.kernel <= 15, p + ".kernel", "must be in [1, 15]");
    out.same_padding = r.choose<bool>(r.get(m.padding, p + ".padding"), p + ".padding",
                                      {{"same", true}, {"valid", false}});
    out.pool = r.choose<PoolMode>(r.get(m.pool, p + ".pool"), p + ".pool",
                                  {{"each", PoolMode::kEach},
                                   {"true", PoolMode::kEach},
                                   {"last", PoolMode::kLast},
                                   {"none", PoolMode::kNone},
                                   {"false", PoolMode::kNone}});
    out.dense = r.get(m.dense, p + ".dense");
    check_widths(out.dense, p + ".dense");
  }
  // A model that cannot fit anywhere is refused before a worker allocates it.
  const double hidden_params = hidden_parameters(out);
  r.check(hidden_params <= kMaxModelParams, p,
          fmt::format("the model has {:.3g} parameters between its hidden layers; the cap is "
                      "{:.3g} (about {} GiB of float32 weights)",
                      hidden_params, kMaxModelParams,
                      static_cast<std::int64_t>(kMaxModelParams * 4 / (1 << 30))));
}

void resolve_data(const TorchDataRecipe& d, Resolver& r, ResolvedData& out) {
  const std::string p = r.prefix() + ".data";
  out.format = d.format;
  out.train_images = d.train_images;
  out.train_labels = d.train_labels;
  out.validation_images = d.validation_images;
  out.validation_labels = d.validation_labels;
  out.test_images = d.test_images;
  out.test_labels = d.test_labels;
  out.train = d.train;
  out.validation = d.validation;
  out.test = d.test;
  out.target = d.target;
  out.validation_fraction = r.get(d.validation_fraction, p + ".validation_fraction");
  out.subset = r.get(d.subset, p + ".subset");
  out.test_subset = r.get(d.test_subset, p + ".test_subset");
  out.seed = r.get(d.seed, p + ".seed");
  out.standardize = r.get(d.standardize, p + ".standardize");
  r.check(out.subset >= 0, p + ".subset", "must be >= 0 (0: all rows)");
  r.check(out.test_subset >= 0, p + ".test_subset", "must be >= 0 (0: all rows)");

  auto required = [&](const std::string& v, const char* key) {
    r.check(!v.empty(), p + "." + key, std::string("is required for format ") + d.format);
  };
  auto paired = [&](const std::string& a, const char* ka, const std::string& b, const char* kb) {
    r.check(a.empty() == b.empty(), p + "." + (a.empty() ? ka : kb),
            std::string("is required with ") + (a.empty() ? kb : ka));
  };
  bool has_validation_file = false;
  if (d.format == "idx") {
    required(d.train_images, "train_images");
    required(d.train_labels, "train_labels");
    paired(d.validation_images, "validation_images", d.validation_labels, "validation_labels");
    paired(d.test_images, "test_images", d.test_labels, "test_labels");
    has_validation_file = !d.validation_images.empty();
    for (auto [key, v] : {std::pair{"train", &d.train},
                          {"validation", &d.validation},
                          {"test", &d.test},
                          {"target", &d.target}})
      r.check(v->empty(), p + "." + key, "is for format csv");
  } else if (d.format == "csv") {
    required(d.train, "train");
    required(d.target, "target");
    has_validation_file = !d.validation.empty();
    for (const auto* v : {&d.train_images, &d.train_labels, &d.validation_images,
                          &d.validation_labels, &d.test_images, &d.test_labels})
      r.check(v->empty(), p, "the *_images/*_labels fields are for format idx");
  } else {
    r.check(false, p + ".format",
            d.format.empty() ? "is required (idx or csv)"
                             : "'" + d.format + "' is not one of: idx, csv");
  }
  if (!has_validation_file)
    r.check(out.validation_fraction > 0 && out.validation_fraction < 1, p + ".validation_fraction",
            "must be in (0, 1) when no validation file is given");
}

void resolve_optimizer(const TorchOptimizerRecipe& o, Resolver& r, ResolvedOptimizer& out) {
  const std::string p = r.prefix() + ".optimizer";
  out.type = r.choose<OptimizerType>(r.get(o.type, p + ".type"), p + ".type",
                                     {{"sgd", OptimizerType::kSgd},
                                      {"adam", OptimizerType::kAdam},
                                      {"adamw", OptimizerType::kAdamW}});
  out.lr = r.get(o.lr, p + ".lr");
  r.check(out.lr > 0 && std::isfinite(out.lr), p + ".lr", "must be > 0");
  out.momentum = r.get(o.momentum, p + ".momentum");
  r.check(out.momentum >= 0 && out.momentum < 1, p + ".momentum", "must be in [0, 1)");
  out.nesterov = r.get(o.nesterov, p + ".nesterov");
  if (out.type == OptimizerType::kSgd)
    r.check(!out.nesterov || out.momentum > 0, p + ".nesterov", "needs momentum > 0");
  out.weight_decay = r.get(o.weight_decay, p + ".weight_decay");
  r.check(out.weight_decay >= 0, p + ".weight_decay", "must be >= 0");
  out.beta1 = r.get(o.beta1, p + ".beta1");
  out.beta2 = r.get(o.beta2, p + ".beta2");
  r.check(out.beta1 >= 0 && out.beta1 < 1, p + ".beta1", "must be in [0, 1)");
  r.check(out.beta2 >= 0 && out.beta2 < 1, p + ".beta2", "must be in [0, 1)");
  out.eps = r.get(o.eps, p + ".eps");
  r.check(out.eps > 0, p + ".eps", "must be > 0");
}

void resolve_schedule(const TorchScheduleRecipe& s, Resolver& r, ResolvedSchedule& out) {
  const std::string p = r.prefix() + ".schedule";
  out.type = r.choose<ScheduleType>(r.get(s.type, p + ".type"), p + ".type",
                                    {{"constant", ScheduleType::kConstant},
                                     {"step", ScheduleType::kStep},
                                     {"cosine", ScheduleType::kCosine}});
  out.step_size = r.get(s.step_size, p + ".step_size");
  r.check(out.step_size >= 1, p + ".step_size", "must be >= 1");
  out.gamma = r.get(s.gamma, p + ".gamma");
  r.check(out.gamma > 0 && out.gamma <= 1, p + ".gamma", "must be in (0, 1]");
  out.min_lr = r.get(s.min_lr, p + ".min_lr");
  r.check(out.min_lr >= 0, p + ".min_lr", "must be >= 0");
  out.warmup_epochs = r.get(s.warmup_epochs, p + ".warmup_epochs");
  r.check(out.warmup_epochs >= 0, p + ".warmup_epochs", "must be >= 0");
}

void resolve_into(const TorchRecipe& t, Resolver& r, ResolvedTorchConfig& out) {
  const std::string& p = r.prefix();
  out.task = r.choose<TorchTask>(
      r.get(t.task, p + ".task"), p + ".task",
      {{"classification", TorchTask::kClassification}, {"regression", TorchTask::kRegression}});
  resolve_model(t.model, r, out.model);
  resolve_data(t.data, r, out.data);
  resolve_optimizer(t.optimizer, r, out.optimizer);
  resolve_schedule(t.schedule, r, out.schedule);
  out.batch_size = r.get(t.batch_size, p + ".batch_size");
  r.check(out.batch_size >= 1 && out.batch_size <= (1 << 20), p + ".batch_size",
          "must be in [1, 1048576]");
  out.eval_batch_size = r.get(t.eval_batch_size, p + ".eval_batch_size");
  r.check(out.eval_batch_size >= 1, p + ".eval_batch_size", "must be >= 1");
  out.epochs = r.get(t.epochs, p + ".epochs");
  r.check(out.epochs >= 1 && out.epochs <= 100000, p + ".epochs", "must be in [1, 100000]");
  out.seed = r.get(t.seed, p + ".seed");
  r.check(out.model.type != ModelType::kCnn || out.data.format != "csv", p + ".model.type",
          "cnn needs image data (data.format idx)");
}

}  // namespace

namespace torch_resolve {

std::vector<FieldError> literal_errors(const TorchRecipe& recipe, const std::string& path) {
  Resolver r(nullptr, path);
  ResolvedTorchConfig unused;
  resolve_into(recipe, r, unused);
  return std::move(r.errors());
}

}  // namespace torch_resolve

double hidden_parameters(const ResolvedModel& m) {
  auto chain = [](const std::vector<std::int64_t>& w, double per_edge) {
    double n = 0;
    for (std::size_t i = 1; i < w.size(); ++i)
      n += static_cast<double>(w[i - 1]) * static_cast<double>(w[i]) * per_edge;
    return n;
  };
  return m.type == ModelType::kMlp
             ? chain(m.layers, 1)
             : chain(m.channels, static_cast<double>(m.kernel * m.kernel)) + chain(m.dense, 1);
}

std::optional<double> literal_hidden_parameters(const TorchRecipe& recipe) {
  Resolver r(nullptr, "trial");
  ResolvedModel model;
  resolve_model(recipe.model, r, model);
  if (r.skipped_under("trial.model")) return std::nullopt;
  return hidden_parameters(model);
}

Result<ResolvedTorchConfig> resolve(const TorchRecipe& recipe, const search::Params& params) {
  Resolver r(&params, "trial");
  ResolvedTorchConfig out;
  resolve_into(recipe, r, out);
  if (r.errors().empty()) return out;
  Error e{ErrorCode::kInvalidArgument, {}, std::move(r.errors())};
  for (const auto& f : e.fields)
    e.message += (e.message.empty() ? "" : "; ") + f.path + ": " + f.message;
  return e;
}

}  // namespace hpo::trials
