#include "tools/CacheConfig.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/Units.h"

namespace tierfs::tools {
namespace {

// What a device at a path can hold: a block device's size, or for a file the free space of the
// filesystem holding it plus what the file already occupies (a device an earlier run made).
struct DeviceRoom {
  dev_t filesystem = 0;     // the filesystem the room is shared on (0: a block device's own)
  std::uint64_t free = 0;   // bytes the filesystem has free for new blocks
  std::uint64_t owned = 0;  // bytes the file (or block device) already has
};

Result<std::uint64_t> blockDeviceSize(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  std::uint64_t bytes = 0;
  const bool ok = fd >= 0 && ::ioctl(fd, BLKGETSIZE64, &bytes) == 0;
  const int err = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) {
    return failure(Status::invalidArgument(
        fmt::format("block device {} cannot be sized: {}", path, std::strerror(err))));
  }
  return bytes;
}

Result<DeviceRoom> roomFor(const std::string& path) {
  struct stat file {};
  if (::stat(path.c_str(), &file) == 0 && S_ISBLK(file.st_mode)) {
    TIERFS_ASSIGN_OR_RETURN(std::uint64_t size, blockDeviceSize(path));
    return DeviceRoom{0, 0, size};
  }
  const bool exists = ::stat(path.c_str(), &file) == 0;
  const std::string dir = std::filesystem::path(path).parent_path().string();
  struct stat dirStat {};
  struct statvfs fs {};
  if (::stat(dir.c_str(), &dirStat) != 0 || !S_ISDIR(dirStat.st_mode) ||
      ::statvfs(dir.c_str(), &fs) != 0) {
    return failure(Status::invalidArgument(fmt::format("directory {} does not exist", dir)));
  }
  DeviceRoom room{dirStat.st_dev, std::uint64_t{fs.f_bavail} * fs.f_frsize, 0};
  if (exists && S_ISREG(file.st_mode)) room.owned = std::uint64_t(file.st_blocks) * 512;
  return room;
}

// Bytes the files under `dir` occupy on filesystem `fs` (an index an earlier run made).
std::uint64_t bytesUnder(const std::string& dir, dev_t fs) {
  std::uint64_t bytes = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == fs) {
      bytes += std::uint64_t(st.st_blocks) * 512;
    }
  }
  return bytes;
}

// The device must fit in what its filesystem has free, together with the devices before it
// on the same filesystem (`claimed`: new bytes promised per filesystem so far). `indexDir`: the
// first device's index, whose share of its size is already used when an earlier run made it.
Status checkFits(const ConfigSection& s, const cache::DeviceSpec& d, const std::string& indexDir,
                 std::map<dev_t, std::uint64_t>& claimed) {
  auto room = roomFor(d.path);
  if (!room) return s.problem("path", fmt::format("'{}': {}", d.path, room.error().message()));
  if (room->filesystem != 0 && !indexDir.empty())
    room->owned += bytesUnder(indexDir, room->filesystem);
  const std::uint64_t needed = d.size > room->owned ? d.size - room->owned : 0;
  if (room->filesystem == 0) {  // a block device: its own size is the limit
    if (d.size <= room->owned) return Status::ok();
    return s.problem("size", fmt::format("{} is larger than block device {} ({})",
                                         formatSize(d.size), d.path, formatSize(room->owned)));
  }
  std::uint64_t& before = claimed[room->filesystem];
  if (before + needed > room->free) {
    return s.problem(
        "size",
        fmt::format(
            "{} does not fit: the filesystem holding {} has {} free{}{}", formatSize(d.size),
            d.path, formatSize(room->free),
            room->owned ? fmt::format(" plus the {} the device (and index) already occupy",
                                      formatSize(room->owned))
                        : "",
            before ? fmt::format(", of which devices above claim {}", formatSize(before)) : ""));
  }
  before += needed;
  return Status::ok();
}

Status readDevice(const ConfigSection& s, cache::DeviceSpec& d) {
  TIERFS_RETURN_IF_ERROR(s.checkKeys({"path", "size"}));
  TIERFS_RETURN_IF_ERROR(s.getString("path", d.path));
  TIERFS_RETURN_IF_ERROR(s.getSize("size", d.size));
  if (d.path.empty() || d.path.front() != '/') {
    return s.problem("path", "must be an absolute path (each [[cache.device]] needs one)");
  }
  if (d.size == 0) return s.problem("size", "must be given and more than 0");
  return Status::ok();
}

// Each device must hold at least one region (the first one besides the index's share).
Status checkHoldsRegion(const ConfigSection& s, const cache::DeviceSpec& d, bool first,
                        std::uint32_t regionSize) {
  const std::uint64_t index = first ? std::min(cache::indexReserve(d.size), d.size) : 0;
  if (d.size - index >= regionSize) return Status::ok();
  return s.problem(
      "size", fmt::format("{} holds no region of {} ([cache] region_size){}", formatSize(d.size),
                          formatSize(regionSize),
                          first ? fmt::format(" besides the index's {}", formatSize(index)) : ""));
}

Status readEviction(const ConfigSection& s, cache::RegionCacheOptions& r) {
  std::string eviction;
  TIERFS_RETURN_IF_ERROR(s.getString("eviction", eviction));
  if (eviction == "fifo") {
    r.eviction = cache::EvictionPolicy::kFifo;
  } else if (eviction == "lru") {
    r.eviction = cache::EvictionPolicy::kLru;
  } else if (eviction == "training") {
    r.eviction = cache::EvictionPolicy::kTraining;
  } else if (!eviction.empty()) {
    return s.problem(
        "eviction", fmt::format("must be \"fifo\", \"lru\" or \"training\", not \"{}\"", eviction));
  }
  return Status::ok();
}

Status readPolicy(const ConfigSection& s, cache::RegionCacheOptions& r) {
  TIERFS_RETURN_IF_ERROR(readEviction(s, r));
  Duration protect = r.protectFor;
  TIERFS_RETURN_IF_ERROR(s.getDuration("protect_for", protect));
  r.protectFor = std::chrono::duration_cast<std::chrono::seconds>(protect);
  std::uint64_t region = r.regionSize;
  TIERFS_RETURN_IF_ERROR(s.getSize("region_size", region));
  if (region < (1 << 20) || region > (256 << 20) || region % 4096 != 0) {
    return s.problem("region_size", "must be from 1M to 256M, a multiple of 4K");
  }
  r.regionSize = static_cast<std::uint32_t>(region);
  std::int64_t buffers = r.buffers;
  TIERFS_RETURN_IF_ERROR(s.getInt("buffers", 1, 64, buffers));
  r.buffers = static_cast<unsigned>(buffers);
  return Status::ok();
}

Status readAdmission(const ConfigSection& s, cache::DeviceTierOptions& devices) {
  std::string admission;
  TIERFS_RETURN_IF_ERROR(s.getString("admission", admission));
  if (admission == "always") {
    devices.admission = cache::Admission::kAlways;
  } else if (admission == "second_miss") {
    devices.admission = cache::Admission::kSecondMiss;
  } else if (!admission.empty()) {
    return s.problem("admission",
                     fmt::format("must be \"always\" or \"second_miss\", not \"{}\"", admission));
  }
  return Status::ok();
}

Status readDevices(const ConfigSection& s, cache::DeviceTierOptions& devices) {
  TIERFS_ASSIGN_OR_RETURN(auto tables, s.tables("device"));
  std::map<dev_t, std::uint64_t> claimed;
  for (const ConfigSection& t : tables) {
    cache::DeviceSpec d;
    TIERFS_RETURN_IF_ERROR(readDevice(t, d));
    TIERFS_RETURN_IF_ERROR(
        checkHoldsRegion(t, d, devices.devices.empty(), devices.regions.regionSize));
    const bool first = devices.devices.empty();
    const std::string indexDir = !first                     ? ""
                                 : devices.indexDir.empty() ? d.path + ".index"
                                                            : devices.indexDir;
    TIERFS_RETURN_IF_ERROR(checkFits(t, d, indexDir, claimed));
    devices.devices.push_back(std::move(d));
  }
  return Status::ok();
}

Status readWatermarks(const ConfigSection& s, cache::RegionCacheOptions& r) {
  TIERFS_RETURN_IF_ERROR(s.getDouble("high_watermark", r.highWatermark));
  TIERFS_RETURN_IF_ERROR(s.getDouble("low_watermark", r.lowWatermark));
  if (!(r.highWatermark > 0 && r.highWatermark <= 1)) {
    return s.problem("high_watermark", "must be above 0 and at most 1 (a fraction of the regions)");
  }
  if (!(r.lowWatermark > 0 && r.lowWatermark <= r.highWatermark)) {
    return s.problem("low_watermark", fmt::format("must be above 0 and at most high_watermark ({})",
                                                  r.highWatermark));
  }
  return Status::ok();
}

}  // namespace

Status readCacheSection(const ConfigSection& s, cache::MemoryChunkCacheOptions& memory,
                        cache::DeviceTierOptions& devices) {
  TIERFS_RETURN_IF_ERROR(s.checkKeys(
      {"memory_size", "region_size", "eviction", "protect_for", "buffers", "store_compressed",
       "admission", "index_dir", "device_threads", "device", "high_watermark", "low_watermark"}));
  TIERFS_RETURN_IF_ERROR(s.getSize("memory_size", memory.capacityBytes));
  std::int64_t threads = memory.deviceThreads;
  TIERFS_RETURN_IF_ERROR(s.getInt("device_threads", 1, 256, threads));
  memory.deviceThreads = static_cast<unsigned>(threads);
  TIERFS_RETURN_IF_ERROR(readPolicy(s, devices.regions));
  TIERFS_RETURN_IF_ERROR(readWatermarks(s, devices.regions));
  TIERFS_RETURN_IF_ERROR(s.getBool("store_compressed", devices.storeCompressed));
  TIERFS_RETURN_IF_ERROR(readAdmission(s, devices));
  TIERFS_RETURN_IF_ERROR(s.getString("index_dir", devices.indexDir));
  if (!devices.indexDir.empty() && devices.indexDir.front() != '/') {
    return s.problem("index_dir", "must be an absolute path");
  }
  return readDevices(s, devices);
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
