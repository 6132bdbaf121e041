#include "cache/DeviceLabel.h"

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <random>

#include "cache/Checksum.h"
#include "common/BufferPool.h"

namespace tierfs::cache {
namespace {

// The label's first 40 bytes (host byte order: a cache device belongs to one host); the rest of
// its block is zero.
struct LabelBlock {
  char magic[8];
  std::uint32_t version;
  std::uint32_t reserved;
  std::array<std::uint64_t, 2> id;
  std::uint64_t checksum;  // XXH3-64 of the bytes before it
};
static_assert(sizeof(LabelBlock) == 40);
constexpr char kLabelMagic[8] = {'T', 'F', 'S', 'L', 'A', 'B', 'E', 'L'};
constexpr std::uint32_t kLabelVersion = 1;

std::uint64_t checksumOf(const LabelBlock& b) { return xxh3(&b, offsetof(LabelBlock, checksum)); }

std::string hexId(const LabelBlock& b) { return fmt::format("{:016x}{:016x}", b.id[0], b.id[1]); }

}  // namespace

Result<DeviceLabel> readOrWriteDeviceLabel(Device& dev, std::uint64_t offset) {
  std::shared_ptr<char> block = allocatePages(kDeviceLabelBytes);
  if (Status s = dev.read(offset, block.get(), kDeviceLabelBytes); !s.isOk()) {
    return failure(Status::ioError(
        fmt::format("cache device {}: reading its label: {}", dev.name(), s.message())));
  }
  LabelBlock b;
  std::memcpy(&b, block.get(), sizeof b);
  if (std::memcmp(b.magic, kLabelMagic, sizeof kLabelMagic) == 0 && b.version == kLabelVersion &&
      b.checksum == checksumOf(b)) {
    return DeviceLabel{hexId(b), false};
  }
  std::random_device random;
  b = LabelBlock{};
  std::memcpy(b.magic, kLabelMagic, sizeof kLabelMagic);
  b.version = kLabelVersion;
  for (std::uint64_t& word : b.id) word = (std::uint64_t{random()} << 32) | random();
  b.checksum = checksumOf(b);
  std::memset(block.get(), 0, kDeviceLabelBytes);
  std::memcpy(block.get(), &b, sizeof b);
  Status s = dev.write(offset, block.get(), kDeviceLabelBytes);
  if (s.isOk()) s = dev.flush();
  if (!s.isOk()) {
    return failure(Status::ioError(
        fmt::format("cache device {}: writing its label: {}", dev.name(), s.message())));
  }
  return DeviceLabel{hexId(b), true};
}

}  // namespace tierfs::cache
