// The torch recipe codec. Parsing only reads shapes (literal of the right type,
// or "{param}"); every value check lives in resolve_into() (torch_resolve.cpp),
// which the parser runs too with no parameters: references keep their defaults
// and errors on their paths are dropped, so a literal lr of -1 is refused at
// submit time and a swept lr of -1 is refused when that trial is resolved, by
// the same line.
#include "trials/spec/recipe/torch_recipe.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trials/json_fields.hpp"
#include "trials/json_limits.hpp"
#include "trials/spec/recipe/torch_resolve.hpp"

namespace hpo::trials {
namespace {

using nlohmann::json;
using torch_resolve::type_name;

// "{name}" -> name; anything else -> empty.
std::string param_ref(const json& v) {
  if (!v.is_string()) return {};
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() < 3 || s.front() != '{' || s.back() != '}') return {};
  std::string name = s.substr(1, s.size() - 2);
  if (name.find_first_of("{}") != std::string::npos) return {};
  return name;
}

bool literal(const json& v, std::int64_t& out) {
  if (v.is_number_integer()) {
    auto i = json_int64(v);  // past int64: refused, not wrapped
    if (!i) return false;
    out = *i;
    return true;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::floor(d) != d || std::abs(d) > 9e15) return false;
    out = static_cast<std::int64_t>(d);
    return true;
  }
  return false;
}
bool literal(const json& v, double& out) {
  if (!v.is_number()) return false;
  out = v.get<double>();
  return true;
}
bool literal(const json& v, bool& out) {
  if (!v.is_boolean()) return false;
  out = v.get<bool>();
  return true;
}
// Booleans read as "true"/"false" so that "pool": true means "each".
bool literal(const json& v, std::string& out) {
  if (v.is_boolean()) {
    out = v.get<bool>() ? "true" : "false";
    return true;
  }
  if (!v.is_string()) return false;
  out = v.get<std::string>();
  return true;
}

// What a field of type T may hold: a literal, or a reference to a parameter.
template <class T>
std::string expected_literal() {
  return std::string(type_name<T>()) + " or \"{parameter}\"";
}

// The recipe's grammar: null is a wrong value, not an absent key; 2.0 is an integer (literal()).
constexpr FieldRules kTorchRules{.null_is_absent = false};

template <class T>
void field(FieldReader& r, const char* key, Sweepable<T>& out) {
  const json* v = r.get(key);
  if (!v) return;
  if (std::string ref = param_ref(*v); !ref.empty()) {
    out.ref = std::move(ref);
    return;
  }
  if (!literal(*v, out.value)) r.expected(r.at(key), expected_literal<T>(), *v);
}

void field(FieldReader& r, const char* key, SweepableIntList& out) {
  const json* v = r.get(key);
  if (!v) return;
  out = {};
  if (std::string ref = param_ref(*v); !ref.empty()) {
    out.ref = std::move(ref);
    return;
  }
  std::int64_t one = 0;
  if (literal(*v, one)) {  // a single width is a one-element list
    out.items.push_back({one, {}});
    return;
  }
  if (!v->is_array()) return r.expected(r.at(key), "an array of integers or \"{parameter}\"", *v);
  for (std::size_t i = 0; i < v->size(); ++i) {
    Sweepable<std::int64_t> item;
    const json& e = (*v)[i];
    if (std::string ref = param_ref(e); !ref.empty())
      item.ref = std::move(ref);
    else if (!literal(e, item.value))
      r.expected(FieldReader::item(r.at(key), i), expected_literal<std::int64_t>(), e);
    out.items.push_back(std::move(item));
  }
}

void field(FieldReader& r, const char* key, std::string& out) {
  if (auto s = r.string(key)) out = std::move(*s);
}

// A nested object: `read` fills it; absent is fine, another type is an error.
template <class F>
void object(FieldReader& r, const char* key, std::vector<FieldError>& errors, F&& read) {
  const json* v = r.object(key);
  if (!v) return;
  FieldReader sub(*v, r.at(key), errors, kTorchRules);
  read(sub);
  sub.unknown_keys();
}

}  // namespace

void parse_torch_recipe(const nlohmann::json& j, const std::string& path, TorchRecipe& out,
                        std::vector<std::string>& consumed, std::vector<FieldError>& errors) {
  out = {};
  FieldReader top(j, path, errors, kTorchRules);
  field(top, "task", out.task);
  object(top, "model", errors, [&](FieldReader& m) {
    auto& o = out.model;
    field(m, "type", o.type);
    field(m, "hidden", o.hidden);
    field(m, "depth", o.depth);
    field(m, "layers", o.layers);
    field(m, "channels", o.channels);
    field(m, "kernel", o.kernel);
    field(m, "padding", o.padding);
    field(m, "pool", o.pool);
    field(m, "dense", o.dense);
    field(m, "activation", o.activation);
    field(m, "dropout", o.dropout);
    field(m, "batch_norm", o.batch_norm);
  });
  if (!j.contains("data")) errors.push_back({path + ".data", "is required for kind torch"});
  object(top, "data", errors, [&](FieldReader& d) {
    auto& o = out.data;
    field(d, "format", o.format);
    for (auto [key, slot] : {std::pair{"train_images", &o.train_images},
                             {"train_labels", &o.train_labels},
                             {"validation_images", &o.validation_images},
                             {"validation_labels", &o.validation_labels},
                             {"test_images", &o.test_images},
                             {"test_labels", &o.test_labels},
                             {"train", &o.train},
                             {"validation", &o.validation},
                             {"test", &o.test},
                             {"target", &o.target}})
      field(d, key, *slot);
    field(d, "validation_fraction", o.validation_fraction);
    field(d, "subset", o.subset);
    field(d, "test_subset", o.test_subset);
    field(d, "seed", o.seed);
    field(d, "standardize", o.standardize);
  });
  object(top, "optimizer", errors, [&](FieldReader& o) {
    auto& r = out.optimizer;
    field(o, "type", r.type);
    field(o, "lr", r.lr);
    field(o, "momentum", r.momentum);
    field(o, "nesterov", r.nesterov);
    field(o, "weight_decay", r.weight_decay);
    field(o, "beta1", r.beta1);
    field(o, "beta2", r.beta2);
    field(o, "eps", r.eps);
  });
  object(top, "schedule", errors, [&](FieldReader& s) {
    auto& r = out.schedule;
    field(s, "type", r.type);
    field(s, "step_size", r.step_size);
    field(s, "gamma", r.gamma);
    field(s, "min_lr", r.min_lr);
    field(s, "warmup_epochs", r.warmup_epochs);
  });
  field(top, "batch_size", out.batch_size);
  field(top, "eval_batch_size", out.eval_batch_size);
  field(top, "epochs", out.epochs);
  field(top, "seed", out.seed);
  consumed.insert(consumed.end(), top.seen().begin(), top.seen().end());

  // Value checks on the literals (references are checked per trial by resolve()).
  std::size_t shape_errors = errors.size();
  for (auto& e : torch_resolve::literal_errors(out, path)) {
    bool dup = std::any_of(errors.begin(), errors.begin() + shape_errors,
                           [&](const FieldError& x) { return x.path == e.path; });
    if (!dup) errors.push_back(std::move(e));
  }
}

std::vector<std::string> torch_recipe_param_refs(const TorchRecipe& t) {
  std::set<std::string> refs;
  auto add = [&](const auto& f) {
    if (f.is_ref()) refs.insert(f.ref);
  };
  auto add_list = [&](const SweepableIntList& l) {
    if (!l.ref.empty()) refs.insert(l.ref);
    for (const auto& i : l.items) add(i);
  };
  add(t.task);
  const auto& m = t.model;
  add(m.type), add(m.hidden), add(m.depth), add_list(m.layers), add_list(m.channels);
  add(m.kernel), add(m.padding), add(m.pool), add_list(m.dense), add(m.activation);
  add(m.dropout), add(m.batch_norm);
  const auto& d = t.data;
  add(d.validation_fraction), add(d.subset), add(d.test_subset), add(d.seed), add(d.standardize);
  const auto& o = t.optimizer;
  add(o.type), add(o.lr), add(o.momentum), add(o.nesterov), add(o.weight_decay), add(o.beta1);
  add(o.beta2), add(o.eps);
  const auto& s = t.schedule;
  add(s.type), add(s.step_size), add(s.gamma), add(s.min_lr), add(s.warmup_epochs);
  add(t.batch_size), add(t.eval_batch_size), add(t.epochs), add(t.seed);
  return {refs.begin(), refs.end()};
}

}  // namespace hpo::trials
