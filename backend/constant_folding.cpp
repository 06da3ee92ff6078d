// backend/constant_folding.cpp - ConstantCache and ExecutorConstants.
#include "backend/constant_folding.h"

#include "ir/check.h"

namespace txl::backend {

bool ConstantCache::contains(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return values_.count(key) != 0;
}

ir::Tensor ConstantCache::find(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = values_.find(key);
  return it == values_.end() ? ir::Tensor() : it->second;
}

void ConstantCache::insert(const std::string& key, ir::Tensor value) {
  std::lock_guard lock(mutex_);
  values_.emplace(key, std::move(value));
}

std::size_t ConstantCache::size() const {
  std::lock_guard lock(mutex_);
  return values_.size();
}

std::size_t ConstantCache::bytes() const {
  std::lock_guard lock(mutex_);
  std::size_t total = 0;
  for (const auto& [key, value] : values_) total += value.bytes();
  return total;
}

void ExecutorConstants::evaluate(const ir::Graph& cones, const std::vector<std::string>& keys) {
  auto plan = executor_.compile(cones, weights_);
  const TensorMap& values = plan->run({});
  for (std::size_t j = 0; j < keys.size(); ++j) cache_.insert(keys[j], values.at(std::to_string(j)).clone());
}

void ExecutorConstants::bind(const std::string& name, const std::string& key) {
  ir::Tensor value = cache_.find(key);
  TXL_CHECK(cache_.contains(key), "constant missing from the cache");
  bound_[name] = value;
}

}  // namespace txl::backend
