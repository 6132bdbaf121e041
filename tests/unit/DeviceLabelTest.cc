// A cache device's label: written once, read back the same on every later open, and written anew
// when the device's end was overwritten.

#include <gtest/gtest.h>

#include <memory>

#include "cache/DeviceLabel.h"
#include "common/BufferPool.h"

namespace tierfs::testing {
namespace {

using cache::kDeviceLabelBytes;
using cache::MemoryDevice;
using cache::readOrWriteDeviceLabel;

TEST(DeviceLabel, IsWrittenOnceAndReadBackOnEveryOpen) {
  MemoryDevice dev(16 * kDeviceLabelBytes);
  const std::uint64_t at = 15 * kDeviceLabelBytes;
  auto first = readOrWriteDeviceLabel(dev, at);
  ASSERT_TRUE(first) << first.error().toString();
  EXPECT_TRUE(first->fresh);
  EXPECT_EQ(first->id.size(), 32u);
  dev.dropUnflushed();  // written durably: a crash right after keeps it
  auto again = readOrWriteDeviceLabel(dev, at);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->fresh);
  EXPECT_EQ(again->id, first->id);
}

TEST(DeviceLabel, ADamagedOrMissingLabelIsReplacedByANewId) {
  MemoryDevice dev(16 * kDeviceLabelBytes);
  const std::uint64_t at = 15 * kDeviceLabelBytes;
  auto first = readOrWriteDeviceLabel(dev, at);
  ASSERT_TRUE(first);
  std::shared_ptr<char> block = allocatePages(kDeviceLabelBytes);
  ASSERT_TRUE(dev.read(at, block.get(), kDeviceLabelBytes).isOk());
  block.get()[20] ^= 1;  // a bit of the id
  ASSERT_TRUE(dev.write(at, block.get(), kDeviceLabelBytes).isOk());
  auto second = readOrWriteDeviceLabel(dev, at);
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->fresh);
  EXPECT_NE(second->id, first->id);
  MemoryDevice blank(16 * kDeviceLabelBytes);  // another device: another id
  auto other = readOrWriteDeviceLabel(blank, at);
  ASSERT_TRUE(other);
  EXPECT_NE(other->id, first->id);
}

TEST(DeviceLabel, AnUnreadableDeviceIsAnErrorNamingIt) {
  MemoryDevice dev(16 * kDeviceLabelBytes);
  dev.failReads(1);
  auto label = readOrWriteDeviceLabel(dev, 15 * kDeviceLabelBytes);
  ASSERT_FALSE(label);
  EXPECT_NE(label.error().message().find("label"), std::string::npos) << label.error().toString();
  EXPECT_NE(label.error().message().find("memory"), std::string::npos) << label.error().toString();
}

}  // namespace
}  // namespace tierfs::testing
