// The model view of a search space, shared by the model-based samplers.
//
// Two coordinate systems:
//  - unit coordinates u: one number in [0, 1] per parameter, in spec order
//    (encoding.hpp's mapping; inactive parameters keep a coordinate that is
//    ignored). Candidate generation and local search move in u.
//  - features f: what the GP kernel sees. A numeric parameter gives one
//    feature, its u rounded to the value it stands for (so ints and steps
//    are seen exactly as they will be run); a categorical gives a one-hot
//    block. An inactive numeric parameter reads 0.5 and an inactive
//    categorical all zeros: the parent's own feature already separates the
//    branches, and a constant keeps inactive dimensions out of the distance.
// Activity is decided on u without building Params (the hot path evaluates
// thousands of candidates per ask): each conditional parameter keeps a table
// of which of its parent's discrete values activate it.
#pragma once

#include <Eigen/Core>
#include <vector>

#include "search/space.hpp"

namespace hpo::search {

class FeatureMap {
 public:
  explicit FeatureMap(SearchSpace space);

  const SearchSpace& space() const { return space_; }
  int unit_dims() const { return static_cast<int>(space_.params.size()); }
  int feature_dims() const { return feature_dims_; }
  // True when parameter i is numeric (moves continuously in u).
  bool is_numeric(int i) const;
  // The feature rows of the numeric parameters.
  std::vector<int> numeric_features() const;
  // 1 where a numeric parameter is active at each point, else 0 (numeric
  // parameters, in numeric_features()'s order, x points).
  Eigen::MatrixXd numeric_activity(const std::vector<Eigen::VectorXd>& us) const;

  // The unit coordinates of stored params (inactive / missing: 0.5).
  Eigen::VectorXd unit_of(const Params& params) const;
  // Which parameters are active at u.
  std::vector<char> active_at(const Eigen::VectorXd& u) const;
  // Features of the point u (f must have feature_dims() rows).
  void features(const Eigen::VectorXd& u, Eigen::Ref<Eigen::VectorXd> f) const;
  Eigen::MatrixXd features(const std::vector<Eigen::VectorXd>& us) const;
  // The params u stands for (inactive parameters absent).
  Params params_of(const Eigen::VectorXd& u) const;

 private:
  struct Entry {
    int parent = -1;               // index of the parent parameter, -1: unconditional
    std::vector<char> activating;  // parent discrete index -> activates this parameter
    int feature = 0;               // first feature column
    int width = 1;                 // 1, or the number of choices
  };
  SearchSpace space_;
  std::vector<Entry> entries_;
  int feature_dims_ = 0;
};

}  // namespace hpo::search
