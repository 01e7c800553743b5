#include "search/feature_map.hpp"

#include <algorithm>

#include "search/encoding.hpp"

namespace hpo::search {

FeatureMap::FeatureMap(SearchSpace space) : space_(std::move(space)) {
  const auto& ps = space_.params;
  entries_.resize(ps.size());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    Entry& e = entries_[i];
    e.feature = feature_dims_;
    e.width = ps[i].type == ParamType::kCategorical ? static_cast<int>(ps[i].choices.size()) : 1;
    feature_dims_ += e.width;
    if (!ps[i].when) continue;
    for (std::size_t j = 0; j < i; ++j)
      if (ps[j].name == ps[i].when->parent) e.parent = static_cast<int>(j);
    if (e.parent < 0) continue;  // unknown parent: never active (the validator rejects it)
    const ParamSpec& parent = ps[static_cast<std::size_t>(e.parent)];
    auto n = discrete_count(parent);
    if (!n) continue;  // continuous parent: decided through values (slow path)
    e.activating.resize(static_cast<std::size_t>(*n));
    for (std::int64_t k = 0; k < *n; ++k) {
      Params probe{{parent.name, discrete_value(parent, k)}};
      e.activating[static_cast<std::size_t>(k)] = is_active(ps[i], probe);
    }
  }
}

bool FeatureMap::is_numeric(int i) const {
  return space_.params[static_cast<std::size_t>(i)].type != ParamType::kCategorical;
}

std::vector<int> FeatureMap::numeric_features() const {
  std::vector<int> rows;
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (is_numeric(static_cast<int>(i))) rows.push_back(entries_[i].feature);
  return rows;
}

Eigen::MatrixXd FeatureMap::numeric_activity(const std::vector<Eigen::VectorXd>& us) const {
  std::vector<int> numeric;
  for (int i = 0; i < unit_dims(); ++i)
    if (is_numeric(i)) numeric.push_back(i);
  Eigen::MatrixXd active =
      Eigen::MatrixXd::Ones(Eigen::Index(numeric.size()), Eigen::Index(us.size()));
  const auto& params = space_.params;
  if (std::none_of(params.begin(), params.end(), [](const auto& q) { return q.when.has_value(); }))
    return active;
  for (std::size_t k = 0; k < us.size(); ++k) {
    const auto on = active_at(us[k]);
    for (std::size_t j = 0; j < numeric.size(); ++j)
      active(Eigen::Index(j), Eigen::Index(k)) = on[std::size_t(numeric[j])] ? 1 : 0;
  }
  return active;
}

Eigen::VectorXd FeatureMap::unit_of(const Params& params) const {
  Eigen::VectorXd u = Eigen::VectorXd::Constant(unit_dims(), 0.5);
  for (int i = 0; i < unit_dims(); ++i) {
    const ParamSpec& spec = space_.params[static_cast<std::size_t>(i)];
    auto it = params.find(spec.name);
    if (it != params.end()) u[i] = to_unit(spec, it->second);
  }
  return u;
}

std::vector<char> FeatureMap::active_at(const Eigen::VectorXd& u) const {
  std::vector<char> active(entries_.size(), 1);
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    const ParamSpec& spec = space_.params[i];
    if (!spec.when) continue;
    if (e.parent < 0 || !active[static_cast<std::size_t>(e.parent)]) {
      active[i] = 0;
      continue;
    }
    const ParamSpec& parent = space_.params[static_cast<std::size_t>(e.parent)];
    if (!e.activating.empty()) {
      active[i] = e.activating[static_cast<std::size_t>(discrete_index(parent, u[e.parent]))];
    } else {
      Params probe{{parent.name, from_unit(parent, u[e.parent])}};
      active[i] = is_active(spec, probe);
    }
  }
  return active;
}

void FeatureMap::features(const Eigen::VectorXd& u, Eigen::Ref<Eigen::VectorXd> f) const {
  auto active = active_at(u);
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    const ParamSpec& spec = space_.params[i];
    const auto ui = u[static_cast<Eigen::Index>(i)];
    if (spec.type == ParamType::kCategorical) {
      f.segment(e.feature, e.width).setZero();
      if (active[i]) f[e.feature + discrete_index(spec, ui)] = 1;
    } else {
      f[e.feature] = active[i] ? snap_unit(spec, ui) : 0.5;
    }
  }
}

Eigen::MatrixXd FeatureMap::features(const std::vector<Eigen::VectorXd>& us) const {
  Eigen::MatrixXd f(feature_dims_, static_cast<Eigen::Index>(us.size()));
  for (std::size_t k = 0; k < us.size(); ++k) features(us[k], f.col(static_cast<Eigen::Index>(k)));
  return f;
}

Params FeatureMap::params_of(const Eigen::VectorXd& u) const {
  std::vector<double> v(u.data(), u.data() + u.size());
  return params_from_unit(space_, v);
}

}  // namespace hpo::search
