// make_pruner: the one place that maps a PrunerConfig to an implementation.
#include "search/pruner.hpp"

namespace hpo::search {
namespace {

// Placeholder until the median and ASHA pruners land: never stops a trial.
class NeverPruner final : public Pruner {
 public:
  bool should_prune(std::span<const StepValue>, std::span<const Observation>) const override {
    return false;
  }
};

}  // namespace

std::unique_ptr<Pruner> make_pruner(const PrunerConfig&) {
  return std::make_unique<NeverPruner>();
}

}  // namespace hpo::search
