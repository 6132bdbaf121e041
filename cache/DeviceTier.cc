#include "cache/DeviceTier.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "cache/ChunkCodec.h"
#include "cache/DeviceLabel.h"
#include "cache/FaultyDevice.h"

namespace tierfs::cache {
namespace {

// Bytes a region has on top of its configured size, for its entries' headers: a 16 MiB region then
// holds four 4 MiB chunks, where the fourth's 40-byte header used to push it out and leave a
// quarter of every device unused.
constexpr std::uint32_t kRegionHeadroom = 4096;

// Disk bytes an entry may take in the index: a record's share (~40 bytes) times RocksDB's
// space amplification and its logs, with room to spare.
constexpr std::uint64_t kIndexBytesPerEntry = 256;

std::uint64_t directoryBytes(const std::filesystem::path& dir) {
  std::error_code ec;
  std::uint64_t total = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

// What the cached bytes belong to and how they are laid out; `labels` are the devices' ids
// (DeviceLabel.h), so that a recreated or replaced device empties the index.
std::string identityOf(const DeviceTierOptions& o, const std::vector<std::string>& labels) {
  std::string devices;
  for (std::size_t i = 0; i < o.devices.size(); ++i) {
    devices += fmt::format("{}:{}:{};", o.devices[i].path, o.devices[i].size, labels[i]);
  }
  return fmt::format("tierfs-cache 1; owner {}; region {}; devices {}", o.owner,
                     o.regions.regionSize, devices);
}

}  // namespace

std::uint64_t indexReserve(std::uint64_t firstDeviceSize) {
  return std::clamp<std::uint64_t>(firstDeviceSize / 64, 16 << 20, std::uint64_t{4} << 30);
}

std::uint64_t maxEntriesFor(std::uint64_t reserve) {
  return (reserve - reserve / 4) / kIndexBytesPerEntry;
}

std::uint64_t listingBudgetFor(std::uint64_t reserve) { return reserve / 8; }

Result<std::unique_ptr<DeviceTier>> DeviceTier::open(DeviceTierOptions options) {
  if (options.devices.empty()) return failure(Status::invalidArgument("[cache] names no device"));
  const std::uint64_t reserve = indexReserve(options.devices[0].size);
  if (options.indexDir.empty()) {
    if (namesDevice(options.devices[0].path)) {
      return failure(Status::invalidArgument(fmt::format(
          "cache device {} is a block device: [cache] index_dir must say where the index goes",
          options.devices[0].path)));
    }
    options.indexDir = options.devices[0].path + ".index";
  }
  options.regions.maxEntries = std::min(options.regions.maxEntries, maxEntriesFor(reserve));
  options.regions.regionSize += kRegionHeadroom;

  std::unique_ptr<DeviceTier> tier(new DeviceTier());
  std::vector<Device*> raw;
  std::vector<std::string> labels;
  bool relabelled = false;
  for (std::size_t i = 0; i < options.devices.size(); ++i) {
    const DeviceSpec& spec = options.devices[i];
    // The regions, then the device's label (past the last region: the regions' layout is the
    // same with or without it).
    std::uint64_t room = spec.size - (i == 0 ? std::min(reserve, spec.size) : 0);
    room -= std::min(room, kDeviceLabelBytes);
    room = room / options.regions.regionSize * options.regions.regionSize;
    if (room == 0) {
      return failure(Status::invalidArgument(
          fmt::format("cache device {}: size {} holds no region of {} bytes{}", spec.path,
                      spec.size, options.regions.regionSize,
                      i == 0 ? fmt::format(" besides the index's {} bytes", reserve) : "")));
    }
    TIERFS_ASSIGN_OR_RETURN(auto dev, openFileDevice(FileDeviceOptions{
                                          .path = spec.path, .size = room + kDeviceLabelBytes}));
    TIERFS_ASSIGN_OR_RETURN(DeviceLabel label, readOrWriteDeviceLabel(*dev, room));
    if (label.fresh) {
      spdlog::info("cache device {}: new, recreated or overwritten: labelled {}", spec.path,
                   label.id);
    }
    relabelled |= label.fresh;
    labels.push_back(label.id);
    if (!options.faultFile.empty()) {
      spdlog::warn("cache device {}: faults injected from {}: for tests only", spec.path,
                   options.faultFile);
      dev = makeFaultyDevice(std::move(dev), options.faultFile);
    }
    raw.push_back(dev.get());
    tier->devices_.push_back(std::move(dev));
  }
  bool wiped = false;
  TIERFS_ASSIGN_OR_RETURN(tier->db_,
                          IndexDb::open(options.indexDir, identityOf(options, labels), &wiped));
  if (wiped) {
    spdlog::warn("cache: {} held {}: emptied", options.indexDir,
                 relabelled ? "the chunks of a device that is new or was recreated"
                            : "another volume's or layout's chunks");
  }
  TIERFS_ASSIGN_OR_RETURN(tier->regions_, RegionCache::open(raw, *tier->db_, options.regions));
  TIERFS_ASSIGN_OR_RETURN(tier->listings_,
                          ListingCache::open(*tier->db_, listingBudgetFor(reserve)));
  tier->options_ = std::move(options);
  auto s = tier->regions_->stats();
  spdlog::info("cache: {} entries in {} sealed regions on {} device(s), {} MiB of {} MiB used",
               s.entries, s.sealedRegions, tier->devices_.size(), s.usedBytes >> 20,
               s.capacityBytes >> 20);
  return tier;
}

DeviceTier::~DeviceTier() {
  listings_.reset();
  regions_.reset();  // seals what is buffered, before the index and devices go
  db_.reset();
}

bool DeviceTier::admit(const ChunkKey& key, Origin origin) {
  if (options_.admission == Admission::kAlways || origin == Origin::kWarmed) return true;
  const bool written = origin == Origin::kWritten;
  std::lock_guard lock(mu_);
  const std::uint64_t h = ChunkKeyHash{}(key);
  if (!written && (seen_.erase(h) || seenBefore_.erase(h))) return true;
  ++refused_;
  if (written) return false;
  if (seen_.size() >= options_.regions.maxEntries) {
    seenBefore_ = std::move(seen_);
    seen_.clear();
  }
  seen_.insert(h);
  return false;
}

void DeviceTier::insert(const ChunkKey& key, const Bytes& frame, const Bytes& raw, Origin origin) {
  if (!admit(key, origin)) return;
  auto header = parseFrameHeader(frame.view());
  if (!header) return;  // the caller decoded it already: cannot happen for a sound frame
  if (options_.storeCompressed || header->codec == Codec::kNone) {
    if (regions_->insert(key, frame.view())) {
      std::lock_guard lock(mu_);
      framedBytes_ += frame.size();
      rawBytes_ += header->rawLength;
    }
    return;
  }
  auto plain = encodeChunk(raw.view(), CodecOptions{.codec = Codec::kNone});
  if (plain && regions_->insert(key, *plain)) {
    std::lock_guard lock(mu_);
    framedBytes_ += plain->size();
    rawBytes_ += header->rawLength;
  }
}

std::uint64_t DeviceTier::occupiedBytes() const {
  std::uint64_t total = directoryBytes(options_.indexDir);
  for (const DeviceSpec& d : options_.devices) {
    std::error_code ec;
    auto size = std::filesystem::file_size(d.path, ec);
    if (!ec) total += size;
  }
  return total;
}

std::uint64_t DeviceTier::framedBytes() const {
  std::lock_guard lock(mu_);
  return framedBytes_;
}

std::uint64_t DeviceTier::refused() const {
  std::lock_guard lock(mu_);
  return refused_;
}

std::uint64_t DeviceTier::rawBytes() const {
  std::lock_guard lock(mu_);
  return rawBytes_;
}

}  // namespace tierfs::cache
