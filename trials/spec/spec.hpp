// The sweep spec: what a user submits, parsed once into typed structs.
//
// parse_spec() is the only place that reads a spec's JSON. It checks every
// field and collects *all* errors (each with its JSON path) instead of stopping
// at the first, so a user fixes a spec in one round trip. A spec that parses is
// valid: the rest of hpo never re-checks it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "search/population_based.hpp"
#include "search/pruner.hpp"
#include "search/sampler.hpp"
#include "search/space.hpp"
#include "search/successive_halving.hpp"
#include "trials/constraints.hpp"
#include "trials/spec/recipe/ensemble_recipe.hpp"
#include "trials/spec/recipe/torch_recipe.hpp"

namespace hpo::trials {

struct Objective {
  std::string metric;     // the metric name the trial reports
  bool maximize = false;  // mode: max
  // Several objectives: the hypervolume's reference value for this one (the
  // worst that counts); absent: the worst value among the completed trials.
  std::optional<double> reference;
};

struct SearchConfig {
  search::SamplerConfig sampler;
  std::int64_t max_trials = 10;
  std::int64_t max_concurrent = 1;
  // search.warm_start.sweeps: ended sweeps whose completed trials seed the
  // sampler (search/warm_start.hpp); checked to exist at submit.
  std::vector<std::string> warm_start_sweeps;
  // search.multi_fidelity: ASHA or Hyperband with promotions (BOHB with
  // algorithm tpe or bayesian): every rung of a configuration is a trial with a
  // budget, a promotion resumes the checkpoint of the rung below
  // (trials/trial_plan.hpp). max_trials counts those trials.
  std::optional<search::FidelityConfig> fidelity;
  // search.pbt: population-based training (search/population_based.hpp); each
  // interval of each member is a trial resuming a checkpoint (trials/trial_plan.hpp).
  std::optional<search::PbtConfig> pbt;
};

// trial.data of kind "command": the shape of the user's own data, which its
// prediction files are checked against and ensemble members' bagging plans are
// drawn for (see ensemble/prediction_reader.hpp).
struct CommandData {
  bool regression = false;      // task: classification | regression
  std::int64_t classes = 0;     // classification: K >= 2
  std::int64_t train_rows = 0;  // rows a member's bootstrap is drawn from
  std::int64_t validation_rows = 0;
  std::int64_t test_rows = 0;  // 0: no test set
  std::int64_t features = 0;   // columns a member's feature subset is drawn from
};

// kind "command": argv template, `{name}` replaced by the parameter's value.
struct CommandRecipe {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // extra environment
  std::string cwd;                                       // empty: the worker's
  std::optional<CommandData> data;  // absent: the program writes no predictions
  // "network": "host": the host's network; else ("loopback", the default)
  // loopback only, where the worker confines trials (workers/trial_namespaces.hpp).
  bool host_network = false;
};

// kind "synthetic": a built-in test function computed in the worker.
struct SyntheticRecipe {
  std::string function;    // noop, branin, hartmann6, rosenbrock, ackley
  double sleep_s = 0;      // total wall time the trial takes
  double noise = 0;        // std-dev of Gaussian noise added to the value
  std::int64_t steps = 0;  // >0: reports a learning curve value_s = f(x) + (steps-s)/steps
  // curve: crossing: value_s = f(x) + exp(-(0.5 + 4.5 u) s / steps) instead,
  // u the first parameter's place in its range, so configurations learn at
  // different speeds and early values mislead (multi-fidelity benchmarks).
  bool crossing = false;
};

enum class TrialKind { kCommand, kSynthetic, kTorch };

struct DataParallel {
  int replicas = 1;
  bool average = false;   // mode: average (parameter averaging) instead of allreduce
  int average_every = 1;  // H: steps between averages
  // mode allreduce: gradients travel in buckets of at most this size, each sent
  // while the backward pass computes the earlier layers' (as DDP's bucket_cap_mb).
  double bucket_mb = 0.125;
  // How CPU ranks exchange: "shm" (a shared memory-mapped file; they are on one
  // host), "gloo" (loopback TCP) or "auto" (shm on CPU; GPU ranks use NCCL).
  std::string transport = "auto";
  // Ranks per worker when the trial's ranks span workers (trials/placement.hpp,
  // "Gangs"); 0: any split, all on one worker when one can hold them.
  int per_host = 0;
};

inline constexpr double kDefaultTimeoutS = 24 * 3600.0;

struct TrialRecipe {
  TrialKind kind = TrialKind::kSynthetic;
  CommandRecipe command;
  SyntheticRecipe synthetic;
  TorchRecipe torch;
  // A hung trial (no progress, stuck in I/O) is killed after this; a day by
  // default, so nothing runs forever. 0 (given explicitly) = no limit.
  double timeout_s = kDefaultTimeoutS;
  int max_attempts = 3;
  // resources.gpus: whole devices (1, 2, ...) or a share of one (0 < gpus < 1)
  double gpus = 0;
  double memory_gb = 0;  // resources.memory_gb: the attempt's address-space cap; 0 = none
  // Placement (trials/placement.hpp): what a worker must have to take an attempt.
  // resources.gpu_memory_gb: each whole GPU's memory, at least; what a share reserves
  double gpu_memory_gb = 0;
  std::string gpu_model;            // resources.gpu_model: a substring of the GPU's name
  double cpus = 0;                  // resources.cpus: cores the attempt is promised
  std::vector<std::string> labels;  // resources.labels: "key" or "key=value" the worker carries
  DataParallel data_parallel;
  // Worker slots one attempt occupies: max(1, whole gpus, replicas).
  int slots() const;
};

struct SweepSpec {
  std::string source;  // the JSON text it was parsed from (data-parallel ranks parse it again)
  std::string name;
  Objective objective;  // the first of `objectives`: the sweep's best, pruning, the ensemble
  // Every objective, in the spec's order: `objectives: [...]` (2 to 8) or the one
  // `objective`. With several, the result is the Pareto front (trials/pareto_front.hpp).
  std::vector<Objective> objectives;
  // `constraints: [{metric, max and/or min}, ...]`: bounds on metrics the trial
  // reports; a trial that breaks one is never the best nor on the front, and
  // bayesian and tpe model which region keeps them.
  std::vector<MetricBound> constraints;
  search::SearchSpace space;
  SearchConfig search;
  std::optional<search::PrunerConfig> early_stopping;
  TrialRecipe trial;
  std::optional<EnsembleRecipe> ensemble;
};

// Parses and validates. On failure the error has code kInvalidArgument and one
// FieldError per problem.
Result<SweepSpec> parse_spec(std::string_view json_text);

// The parameters of a trial as JSON text ({"lr": 0.01, "layers": 3}) and back.
std::string params_to_json(const search::Params& params);
Result<search::Params> params_from_json(std::string_view json_text);

// argv with every `{name}` replaced by the parameter's value; `{{` and `}}` are
// literal braces. Validation guarantees every placeholder names a parameter;
// an element naming an inactive conditional parameter is left out (never
// "--momentum=", which argparse refuses), and so is the flag just before an
// element that is only that placeholder ("--momentum", "{momentum}").
std::vector<std::string> render_argv(const std::vector<std::string>& argv,
                                     const search::Params& params);

}  // namespace hpo::trials
