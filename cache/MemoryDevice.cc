// A cache device in memory for tests. Besides plain storage it can play a crash (every write since
// the last flush() is undone), fail the next reads or writes, and flip a bit behind the reader's
// back.
//
// Crash model: before a block is first written after a flush, its durable contents are saved;
// dropUnflushed() puts the saved blocks back. This costs memory only for the blocks written since
// the last flush, not a second copy of the whole device.

#include <fmt/format.h>

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "cache/Device.h"

namespace tierfs::cache {

struct MemoryDevice::State {
  std::mutex mutex;
  const std::string name = "memory";
  std::uint64_t size = 0;
  std::uint32_t alignment = 0;
  std::vector<unsigned char> bytes;  // what reads see
  // Block index → the block's contents as of the last flush(), for every block written since.
  std::unordered_map<std::uint64_t, std::vector<unsigned char>> durableBlocks;
  int failReads = 0;
  int failWrites = 0;
};

MemoryDevice::MemoryDevice(std::uint64_t size, std::uint32_t alignment)
    : state_(std::make_unique<State>()) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    throw std::invalid_argument(
        fmt::format("MemoryDevice: alignment {} is not a power of two", alignment));
  }
  state_->alignment = alignment;
  state_->size = size - size % alignment;  // size() is a multiple of alignment()
  state_->bytes.assign(state_->size, 0);
}

MemoryDevice::~MemoryDevice() = default;

std::uint64_t MemoryDevice::size() const { return state_->size; }

std::uint32_t MemoryDevice::alignment() const { return state_->alignment; }

Status MemoryDevice::write(std::uint64_t offset, const void* buf, std::size_t length) {
  std::lock_guard lock(state_->mutex);
  State& s = *state_;
  TIERFS_RETURN_IF_ERROR(checkRange("write", offset, buf, length));
  if (s.failWrites > 0) {
    --s.failWrites;
    return Status::ioError(fmt::format("cache device {}: write of {} bytes at {}: injected error",
                                       s.name, length, offset));
  }
  for (std::uint64_t block = offset / s.alignment; block < (offset + length) / s.alignment;
       ++block) {
    // try_emplace does nothing for a block saved earlier: the first saved copy is the durable one.
    auto [it, inserted] = s.durableBlocks.try_emplace(block);
    if (inserted) {
      const auto* at = s.bytes.data() + block * s.alignment;
      it->second.assign(at, at + s.alignment);
    }
  }
  if (length > 0) std::memcpy(s.bytes.data() + offset, buf, length);
  return Status::ok();
}

Status MemoryDevice::read(std::uint64_t offset, void* buf, std::size_t length) {
  std::lock_guard lock(state_->mutex);
  State& s = *state_;
  TIERFS_RETURN_IF_ERROR(checkRange("read", offset, buf, length));
  if (s.failReads > 0) {
    --s.failReads;
    return Status::ioError(fmt::format("cache device {}: read of {} bytes at {}: injected error",
                                       s.name, length, offset));
  }
  if (length > 0) std::memcpy(buf, s.bytes.data() + offset, length);
  return Status::ok();
}

Status MemoryDevice::flush() {
  std::lock_guard lock(state_->mutex);
  state_->durableBlocks.clear();
  return Status::ok();
}

const std::string& MemoryDevice::name() const { return state_->name; }

void MemoryDevice::dropUnflushed() {
  std::lock_guard lock(state_->mutex);
  State& s = *state_;
  for (const auto& [block, durable] : s.durableBlocks) {
    std::memcpy(s.bytes.data() + block * s.alignment, durable.data(), s.alignment);
  }
  s.durableBlocks.clear();
}

void MemoryDevice::failReads(int count) {
  std::lock_guard lock(state_->mutex);
  state_->failReads = count;
}

void MemoryDevice::failWrites(int count) {
  std::lock_guard lock(state_->mutex);
  state_->failWrites = count;
}

void MemoryDevice::corrupt(std::uint64_t offset) {
  std::lock_guard lock(state_->mutex);
  State& s = *state_;
  if (offset >= s.size) {
    throw std::out_of_range(
        fmt::format("MemoryDevice::corrupt: offset {} is beyond the size {}", offset, s.size));
  }
  // The medium is damaged: the flipped bit stays whether or not the last write survives a crash.
  s.bytes[offset] ^= 1;
  auto it = s.durableBlocks.find(offset / s.alignment);
  if (it != s.durableBlocks.end()) it->second[offset % s.alignment] ^= 1;
}

}  // namespace tierfs::cache
