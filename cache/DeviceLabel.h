#pragma once

#include <cstdint>
#include <string>

#include "cache/Device.h"
#include "common/Result.h"

namespace tierfs::cache {

// Each cache device ends with a label: a random id written the first time the device is used.
// The index's identity names every device's id, so a device that was recreated (an admin removed
// the cache file to clear the cache and kept its index), replaced or overwritten comes back with
// an empty index, instead of an index naming bytes the device no longer holds (every read of
// them a checksum mismatch, and the device soon taken out of service as failing).
constexpr std::uint64_t kDeviceLabelBytes = 4096;

struct DeviceLabel {
  std::string id;      // 32 hex digits
  bool fresh = false;  // written now: the device had no (sound) label
};

// Reads the label in the kDeviceLabelBytes at `offset` of `dev`; when there is none (a new or an
// overwritten device), writes a new one and makes it durable before returning.
Result<DeviceLabel> readOrWriteDeviceLabel(Device& dev, std::uint64_t offset);

}  // namespace tierfs::cache
