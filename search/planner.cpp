#include "search/planner.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace hpo::search {
namespace {

class PlainPlanner final : public Planner {
 public:
  explicit PlainPlanner(ConfigSource source) : source_(std::move(source)) {}

  void track(const TrackedTrial&) override {}
  void clear() override {}
  Plan next(std::int64_t number, const PlanInputs& in) override {
    Plan plan;
    plan.params = source_(in.history, in.pending, number);
    if (!plan.params) done_ = true;
    return plan;
  }
  bool done() const override { return done_; }

 private:
  ConfigSource source_;
  bool done_ = false;
};

// The finished trial `number` of `history` (ascending number), or null.
const Observation* finished(std::span<const Observation> history, std::int64_t number) {
  auto it = std::lower_bound(history.begin(), history.end(), number,
                             [](const Observation& o, std::int64_t n) { return o.number < n; });
  return it != history.end() && it->number == number ? &*it : nullptr;
}

class HalvingPlanner final : public Planner {
 public:
  HalvingPlanner(FidelityConfig config, ConfigSource source, FidelityModel model,
                 std::size_t min_points)
      : resource_(config.resource),
        schedule_(std::move(config)),
        source_(std::move(source)),
        model_(model),
        min_points_(min_points) {}

  void track(const TrackedTrial& t) override {
    if (!t.lineage || t.lineage->member >= 0) return;
    runs_[t.number] = RungRun{t.number,          t.lineage->bracket, t.lineage->rung,
                              t.lineage->resume, t.finished,         t.value};
  }
  void clear() override { runs_.clear(); }

  Plan next(std::int64_t /*number*/, const PlanInputs& in) override {
    std::vector<RungRun> runs;
    runs.reserve(runs_.size());
    std::int64_t configurations = 0;
    for (const auto& [n, run] : runs_) {
      runs.push_back(run);
      if (run.resumed_from < 0) ++configurations;
    }
    const RungJob job = schedule_.next(runs);
    Plan plan;
    plan.lineage = Lineage{job.budget, job.bracket, job.rung, -1, job.promote, false, resource_};
    if (job.promote >= 0) {
      const Observation* parent = finished(in.history, job.promote);
      if (!parent) {
        plan.lineage.reset();
        plan.error =
            "trial " + std::to_string(job.promote) + " to promote is not among the finished ones";
        return plan;
      }
      plan.params = parent->params;
      return plan;
    }
    // A new configuration: the source's index counts configurations, so its
    // initial design (and a warm start's) spans configurations, not rungs.
    const auto seen = model_history(runs, in.history);
    plan.params = source_(seen ? std::span<const Observation>(*seen) : in.history, in.pending,
                          configurations);
    if (!plan.params) {
      plan.lineage.reset();
      done_ = true;
    }
    return plan;
  }
  bool done() const override { return done_; }

 private:
  std::optional<std::vector<Observation>> model_history(
      std::span<const RungRun> runs, std::span<const Observation> history) const {
    switch (model_) {
      case FidelityModel::kHistory:
        return std::nullopt;
      case FidelityModel::kByConfiguration:
        return schedule_.by_configuration(runs, history);
      case FidelityModel::kLargestBudget: {
        std::vector<Observation> out;
        const auto budget = schedule_.model_budget(runs, min_points_);
        if (!budget) return out;
        for (const Observation& o : history) {
          auto run = runs_.find(o.number);
          if (run != runs_.end() && schedule_.budget_of(run->second) == *budget) out.push_back(o);
        }
        return out;
      }
    }
    return std::nullopt;
  }

  std::string resource_;  // what the budgets count
  SuccessiveHalving schedule_;
  ConfigSource source_;
  FidelityModel model_;
  std::size_t min_points_;
  std::map<std::int64_t, RungRun> runs_;  // every trial's place in the schedule, by number
  bool done_ = false;
};

class PbtPlanner final : public Planner {
 public:
  PbtPlanner(PbtConfig config, SearchSpace space, ConfigSource source)
      : resource_(config.resource),
        schedule_(std::move(config)),
        space_(std::move(space)),
        source_(std::move(source)) {}

  void track(const TrackedTrial& t) override {
    if (!t.lineage || t.lineage->member < 0) return;
    MemberRun& m = members_[t.number];
    m.number = t.number;
    m.member = t.lineage->member;
    m.generation = t.lineage->rung;
    m.resumed_from = t.lineage->resume;
    m.exploited = t.lineage->exploited ? t.lineage->resume : -1;
    m.finished = t.finished;
    m.value = t.value;
    m.params = t.params;
  }
  void clear() override { members_.clear(); }

  Plan next(std::int64_t number, const PlanInputs& in) override {
    std::vector<MemberRun> runs;
    runs.reserve(members_.size());
    for (const auto& [n, run] : members_) runs.push_back(run);
    Plan plan;
    const auto none = [](std::int64_t) { return false; };
    const auto job = in.has_checkpoint ? schedule_.next(runs, in.has_checkpoint, number)
                                       : schedule_.next(runs, none, number);
    if (!job) {
      done_ = schedule_.done(runs);
      return plan;
    }
    Lineage lineage{job->budget,       0,        job->generation, job->member, job->resume,
                    job->exploit >= 0, resource_};
    if (job->resume < 0) {
      // A first member: the source's design, counted by member.
      plan.params = source_(in.history, in.pending, job->member);
      if (!plan.params) plan.error = "the sampler gave no first member";
    } else if (auto from = members_.find(job->resume); from != members_.end()) {
      plan.params = lineage.exploited ? schedule_.explore(space_, from->second.params, number)
                                      : from->second.params;
    } else {
      plan.error = "trial " + std::to_string(job->resume) + " to go on from is unknown";
    }
    if (plan.params) plan.lineage = lineage;
    return plan;
  }
  bool done() const override { return done_; }

 private:
  std::string resource_;  // what the budgets count
  PopulationSchedule schedule_;
  SearchSpace space_;
  ConfigSource source_;
  std::map<std::int64_t, MemberRun> members_;  // every interval's place, by number
  bool done_ = false;
};

}  // namespace

std::unique_ptr<Planner> plain_planner(ConfigSource source) {
  return std::make_unique<PlainPlanner>(std::move(source));
}

std::unique_ptr<Planner> halving_planner(FidelityConfig config, ConfigSource source,
                                         FidelityModel model, std::size_t min_points) {
  return std::make_unique<HalvingPlanner>(std::move(config), std::move(source), model, min_points);
}

std::unique_ptr<Planner> pbt_planner(PbtConfig config, SearchSpace space, ConfigSource source) {
  return std::make_unique<PbtPlanner>(std::move(config), std::move(space), std::move(source));
}

}  // namespace hpo::search
