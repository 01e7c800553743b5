// kind "torch": the built-in LibTorch trainer's recipe (task, model, data,
// optimiser, schedule). Parsed here (trials/ owns every spec struct) and run by
// workers/torch; the format is documented in workers/torch/README.md.
//
// Every architectural and optimisation field may be a literal or the string
// "{name}" naming a sweep parameter, so the recipe keeps a Sweepable<T> per
// field and resolve() turns it into a concrete ResolvedTorchConfig for one
// trial. Value checks (lr > 0, dropout in [0, 1), ...) live in one place
// (the resolver): the parser runs it on the literals, resolve() on everything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.hpp"
#include "search/space.hpp"

namespace hpo::trials {

// A literal value, or a reference to a sweep parameter (`ref` non-empty).
template <class T>
struct Sweepable {
  T value{};        // the literal (or the default when the field is absent)
  std::string ref;  // parameter name when the field was "{name}"
  bool is_ref() const { return !ref.empty(); }
};

// A list of ints ([32, 64], ["{c1}", 64]) or one reference to a parameter
// whose value is an int (a one-element list) or a string "32,64".
struct SweepableIntList {
  std::vector<Sweepable<std::int64_t>> items;
  std::string ref;
};

struct TorchModelRecipe {
  Sweepable<std::string> type{"mlp", {}};  // mlp | cnn
  // mlp: `depth` hidden layers of `hidden` units, or the explicit `layers` list.
  Sweepable<std::int64_t> hidden{128, {}};
  Sweepable<std::int64_t> depth{2, {}};
  SweepableIntList layers;  // non-empty: overrides hidden/depth
  // cnn: one conv block per entry of `channels`, then the `dense` layers.
  SweepableIntList channels{{{32, {}}, {64, {}}}, {}};
  Sweepable<std::int64_t> kernel{3, {}};
  Sweepable<std::string> padding{"same", {}};  // same | valid
  Sweepable<std::string> pool{"each", {}};     // each (true) | last | none (false)
  SweepableIntList dense{{{128, {}}}, {}};
  // both
  Sweepable<std::string> activation{"relu", {}};  // relu | tanh | gelu | leaky_relu | elu | silu
  Sweepable<double> dropout{0.0, {}};
  Sweepable<bool> batch_norm{false, {}};
};

struct TorchDataRecipe {
  std::string format;  // idx | csv
  // idx (MNIST layout, .gz or not)
  std::string train_images, train_labels, validation_images, validation_labels, test_images,
      test_labels;
  // csv (header row, numeric features, one target column)
  std::string train, validation, test, target;
  Sweepable<double> validation_fraction{0.1, {}};  // used when no validation file is given
  Sweepable<std::int64_t> subset{0, {}};           // >0: first N training rows only
  Sweepable<std::int64_t> test_subset{0, {}};      // >0: first N test rows only
  Sweepable<std::int64_t> seed{0, {}};             // the validation split's seed
  Sweepable<bool> standardize{true, {}};           // fitted on the training part only
};

struct TorchOptimizerRecipe {
  Sweepable<std::string> type{"sgd", {}};  // sgd | adam | adamw
  Sweepable<double> lr{0.01, {}};
  Sweepable<double> momentum{0.0, {}};
  Sweepable<bool> nesterov{false, {}};
  Sweepable<double> weight_decay{0.0, {}};
  Sweepable<double> beta1{0.9, {}};
  Sweepable<double> beta2{0.999, {}};
  Sweepable<double> eps{1e-8, {}};
};

struct TorchScheduleRecipe {
  Sweepable<std::string> type{"constant", {}};   // constant | step | cosine
  Sweepable<std::int64_t> step_size{1, {}};      // step: epochs between decays
  Sweepable<double> gamma{0.1, {}};              // step: decay factor
  Sweepable<double> min_lr{0.0, {}};             // cosine: the final learning rate
  Sweepable<std::int64_t> warmup_epochs{0, {}};  // linear warm-up before the schedule
};

struct TorchRecipe {
  Sweepable<std::string> task{"classification", {}};  // classification | regression
  TorchModelRecipe model;
  TorchDataRecipe data;
  TorchOptimizerRecipe optimizer;
  TorchScheduleRecipe schedule;
  Sweepable<std::int64_t> batch_size{128, {}};
  Sweepable<std::int64_t> eval_batch_size{1024, {}};
  Sweepable<std::int64_t> epochs{1, {}};
  Sweepable<std::int64_t> seed{0, {}};  // weights init, shuffling, dropout
};

// The most parameters a built-in model may have between its hidden layers
// (checked on the literals at submit, on every trial's values when resolved).
inline constexpr double kMaxModelParams = 2e9;

// ---- the concrete configuration of one trial ---------------------------------

enum class TorchTask { kClassification, kRegression };
enum class ModelType { kMlp, kCnn };
enum class Activation { kRelu, kTanh, kGelu, kLeakyRelu, kElu, kSilu };
enum class PoolMode { kEach, kLast, kNone };
enum class OptimizerType { kSgd, kAdam, kAdamW };
enum class ScheduleType { kConstant, kStep, kCosine };

struct ResolvedModel {
  ModelType type = ModelType::kMlp;
  std::vector<std::int64_t> layers;    // mlp hidden widths
  std::vector<std::int64_t> channels;  // cnn conv blocks
  std::int64_t kernel = 3;
  bool same_padding = true;
  PoolMode pool = PoolMode::kEach;
  std::vector<std::int64_t> dense;  // cnn dense widths
  Activation activation = Activation::kRelu;
  double dropout = 0;
  bool batch_norm = false;
};

struct ResolvedData {
  std::string format;
  std::string train_images, train_labels, validation_images, validation_labels, test_images,
      test_labels;
  std::string train, validation, test, target;
  double validation_fraction = 0.1;
  std::int64_t subset = 0;
  std::int64_t test_subset = 0;
  std::int64_t seed = 0;
  bool standardize = true;
};

struct ResolvedOptimizer {
  OptimizerType type = OptimizerType::kSgd;
  double lr = 0.01, momentum = 0, weight_decay = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool nesterov = false;
};

struct ResolvedSchedule {
  ScheduleType type = ScheduleType::kConstant;
  std::int64_t step_size = 1;
  double gamma = 0.1;
  double min_lr = 0;
  std::int64_t warmup_epochs = 0;
};

struct ResolvedTorchConfig {
  TorchTask task = TorchTask::kClassification;
  ResolvedModel model;
  ResolvedData data;
  ResolvedOptimizer optimizer;
  ResolvedSchedule schedule;
  std::int64_t batch_size = 128;
  std::int64_t eval_batch_size = 1024;
  std::int64_t epochs = 1;
  std::int64_t seed = 0;
};

// Parses `trial` fields specific to kind "torch" from `j` (the `trial` object).
// Appends one FieldError per problem, paths prefixed by `path` ("trial").
// `consumed` receives the keys it handled so the caller can reject unknown ones;
// unknown keys inside model/data/optimizer/schedule are reported here.
void parse_torch_recipe(const nlohmann::json& j, const std::string& path, TorchRecipe& out,
                        std::vector<std::string>& consumed, std::vector<FieldError>& errors);

// The concrete config of one trial. kInvalidArgument (with field paths under
// "trial.") when a referenced parameter is missing or its value is unusable.
Result<ResolvedTorchConfig> resolve(const TorchRecipe& recipe, const search::Params& params);

// The parameters between a model's hidden layers: the bulk of its weights
// (the input and output layers depend on the data and are small next to them).
double hidden_parameters(const ResolvedModel& model);
// The same for a model whose sizes are all literals; nullopt when a size is
// a parameter of the sweep (known per trial only).
std::optional<double> literal_hidden_parameters(const TorchRecipe& recipe);

// Every parameter name the recipe references, sorted, without duplicates.
std::vector<std::string> torch_recipe_param_refs(const TorchRecipe& recipe);

}  // namespace hpo::trials
