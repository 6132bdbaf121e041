#include "tools/CacheConfig.h"

#include <fmt/format.h>

#include "common/Units.h"

namespace tierfs::tools {
namespace {

Status readDevice(const ConfigSection& s, cache::DeviceSpec& d) {
  TIERFS_RETURN_IF_ERROR(s.checkKeys({"path", "size"}));
  TIERFS_RETURN_IF_ERROR(s.getString("path", d.path));
  TIERFS_RETURN_IF_ERROR(s.getSize("size", d.size));
  if (d.path.empty() || d.path.front() != '/') {
    return Status::invalidArgument("a [[cache.device]] needs an absolute path");
  }
  if (d.size == 0) {
    return Status::invalidArgument(fmt::format("cache device {} needs a size", d.path));
  }
  return Status::ok();
}

Status readPolicy(const ConfigSection& s, cache::RegionCacheOptions& r) {
  std::string eviction;
  TIERFS_RETURN_IF_ERROR(s.getString("eviction", eviction));
  if (eviction == "fifo") {
    r.eviction = cache::EvictionPolicy::kFifo;
  } else if (eviction == "lru") {
    r.eviction = cache::EvictionPolicy::kLru;
  } else if (eviction == "training") {
    r.eviction = cache::EvictionPolicy::kTraining;
  } else if (!eviction.empty()) {
    return Status::invalidArgument(fmt::format(
        "[cache] eviction must be \"fifo\", \"lru\" or \"training\", not \"{}\"", eviction));
  }
  Duration protect = r.protectFor;
  TIERFS_RETURN_IF_ERROR(s.getDuration("protect_for", protect));
  r.protectFor = std::chrono::duration_cast<std::chrono::seconds>(protect);
  std::uint64_t region = r.regionSize;
  TIERFS_RETURN_IF_ERROR(s.getSize("region_size", region));
  if (region < (1 << 20) || region > (256 << 20) || region % 4096 != 0) {
    return Status::invalidArgument("[cache] region_size must be 1M to 256M, a multiple of 4K");
  }
  r.regionSize = static_cast<std::uint32_t>(region);
  std::int64_t buffers = r.buffers;
  TIERFS_RETURN_IF_ERROR(s.getInt("buffers", 1, 64, buffers));
  r.buffers = static_cast<unsigned>(buffers);
  return Status::ok();
}

}  // namespace

Status readCacheSection(const ConfigSection& s, cache::MemoryChunkCacheOptions& memory,
                        cache::DeviceTierOptions& devices) {
  TIERFS_RETURN_IF_ERROR(
      s.checkKeys({"memory_size", "region_size", "eviction", "protect_for", "buffers",
                   "store_compressed", "index_dir", "device_threads", "device"}));
  TIERFS_RETURN_IF_ERROR(s.getSize("memory_size", memory.capacityBytes));
  std::int64_t threads = memory.deviceThreads;
  TIERFS_RETURN_IF_ERROR(s.getInt("device_threads", 1, 256, threads));
  memory.deviceThreads = static_cast<unsigned>(threads);
  TIERFS_RETURN_IF_ERROR(readPolicy(s, devices.regions));
  TIERFS_RETURN_IF_ERROR(s.getBool("store_compressed", devices.storeCompressed));
  std::string admission;
  TIERFS_RETURN_IF_ERROR(s.getString("admission", admission));
  if (admission == "always") {
    devices.admission = cache::Admission::kAlways;
  } else if (admission == "second_miss") {
    devices.admission = cache::Admission::kSecondMiss;
  } else if (!admission.empty()) {
    return Status::invalidArgument(fmt::format(
        "[cache] admission must be \"always\" or \"second_miss\", not \"{}\"", admission));
  }
  TIERFS_RETURN_IF_ERROR(s.getString("index_dir", devices.indexDir));
  TIERFS_ASSIGN_OR_RETURN(auto tables, s.tables("device"));
  for (const ConfigSection& t : tables) {
    cache::DeviceSpec d;
    TIERFS_RETURN_IF_ERROR(readDevice(t, d));
    devices.devices.push_back(std::move(d));
  }
  return Status::ok();
}

Result<cache::DeviceSpec> parseDeviceFlag(std::string_view text) {
  const auto eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0 || text.front() != '/') {
    return failure(Status::invalidArgument(fmt::format(
        "--cache-device '{}': expected /ABSOLUTE/PATH=SIZE, e.g. /nvme/tierfs=100G", text)));
  }
  auto size = parseSize(text.substr(eq + 1));
  if (!size || *size == 0) {
    return failure(Status::invalidArgument(
        fmt::format("--cache-device '{}': bad size '{}'", text, text.substr(eq + 1))));
  }
  return cache::DeviceSpec{std::string(text.substr(0, eq)), *size};
}

}  // namespace tierfs::tools
