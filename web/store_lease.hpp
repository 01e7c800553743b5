// Api::StoreLease: a store borrowed from the Api's pool for one request and
// given back when the lease ends, unless a call found the backend unreachable.
// Internal to the Api's files (api.cpp, api_sweeps.cpp, api_trials.cpp,
// api_resources.cpp): each handler borrows one, so each needs the whole type.
#pragma once

#include <memory>
#include <utility>

#include "core/result.hpp"
#include "trials/store.hpp"
#include "web/api.hpp"

namespace hpo::web {

class Api::StoreLease {
 public:
  StoreLease(Api& api, std::unique_ptr<trials::Store> store)
      : api_(api), store_(std::move(store)) {}
  StoreLease(StoreLease&&) = default;
  ~StoreLease() {
    if (store_ && !broken_) api_.give_back(std::move(store_));
  }
  explicit operator bool() const { return store_ != nullptr; }
  trials::Store* operator->() { return store_.get(); }
  trials::Store& operator*() { return *store_; }
  // Marks the store broken when a call says the backend is unreachable.
  template <class T>
  Result<T> track(Result<T> r) {
    if (!r.ok() && r.error().code == ErrorCode::kUnavailable) broken_ = true;
    return r;
  }

 private:
  Api& api_;
  std::unique_ptr<trials::Store> store_;
  bool broken_ = false;
};

}  // namespace hpo::web
