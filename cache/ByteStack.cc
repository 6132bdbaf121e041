#include "cache/ByteStack.h"

#include <algorithm>

namespace tierfs::cache {
namespace {

// Stamps before the first renumbering: enough that small stacks never need one.
constexpr std::size_t kInitialStamps = 1024;

}  // namespace

std::optional<std::uint64_t> ByteStack::access(std::uint64_t key, std::uint64_t bytes) {
  if (nextStamp_ >= tree_.size()) renumber();
  std::optional<std::uint64_t> distance;
  auto [it, first] = keys_.try_emplace(key);
  Entry& e = it->second;
  if (!first) {
    distance = totalBytes_ - prefix(e.stamp);
    add(e.stamp, -static_cast<std::int64_t>(e.bytes));
    totalBytes_ -= e.bytes;
  }
  e.stamp = nextStamp_++;
  e.bytes = bytes;
  add(e.stamp, static_cast<std::int64_t>(bytes));
  totalBytes_ += bytes;
  return distance;
}

void ByteStack::erase(std::uint64_t key) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  add(it->second.stamp, -static_cast<std::int64_t>(it->second.bytes));
  totalBytes_ -= it->second.bytes;
  keys_.erase(it);
}

std::size_t ByteStack::memoryBytes() const {
  return tree_.capacity() * sizeof(std::uint64_t) +
         keys_.capacity() * (sizeof(std::pair<std::uint64_t, Entry>) + 1);
}

void ByteStack::add(std::uint64_t stamp, std::int64_t delta) {
  for (std::uint64_t i = stamp + 1; i <= tree_.size(); i += i & -i) {
    tree_[i - 1] += static_cast<std::uint64_t>(delta);  // wraps back for negative deltas
  }
}

std::uint64_t ByteStack::prefix(std::uint64_t stamp) const {
  std::uint64_t sum = 0;
  for (std::uint64_t i = stamp + 1; i > 0; i -= i & -i) sum += tree_[i - 1];
  return sum;
}

// Gives the live keys the stamps 0..n-1 in their order, in a tree with room for as many again
// (so renumbering, O(n log n), happens at most once every n accesses).
void ByteStack::renumber() {
  std::vector<std::pair<std::uint64_t, Entry*>> order;
  order.reserve(keys_.size());
  for (auto& [key, e] : keys_) order.emplace_back(e.stamp, &e);
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  tree_.assign(std::max(kInitialStamps, 2 * order.size()), 0);
  nextStamp_ = 0;
  for (auto& [stamp, e] : order) {
    e->stamp = nextStamp_++;
    add(e->stamp, static_cast<std::int64_t>(e->bytes));
  }
}

}  // namespace tierfs::cache
