// The dataset code's one error for bad data, shared by its .cpp files
// (dataset_readers.cpp, dataset.cpp): a file or a split the trial cannot use
// is the user's to fix, so the trial fails with the reason and is not retried.
// Internal to workers/torch/.
#pragma once

#include <string>
#include <utility>

#include "core/result.hpp"

namespace hpo::workers::torch_trainer {

inline Error data_error(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), {}};
}

}  // namespace hpo::workers::torch_trainer
