#include "cache/RegionCache.h"

#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <thread>
#include <tuple>

#include "cache/Checksum.h"

namespace tierfs::cache {
namespace {

using SealStep = RegionCacheOptions::SealStep;

// An entry on a device: this header, then the payload, padded to kEntryAlign. Host byte order:
// a cache device belongs to one host.
struct EntryHeader {
  std::uint32_t magic;
  std::uint32_t length;  // of the payload
  std::uint64_t ino;
  std::uint64_t version;
  std::uint32_t piece;
  std::uint32_t reserved;
  std::uint64_t checksum;  // XXH3-64 of the payload
};
constexpr std::uint32_t kEntryMagic = 0x45434654;  // "TFCE"
constexpr std::uint64_t kHeaderSize = sizeof(EntryHeader);
constexpr std::uint64_t kEntryAlign = 16;
static_assert(kHeaderSize == 40);

std::uint64_t roundUp(std::uint64_t n, std::uint64_t unit) { return (n + unit - 1) / unit * unit; }

std::uint64_t keyHash(const ChunkKey& k) {
  struct {
    std::uint64_t ino, version;
    std::uint32_t piece;
  } packed{k.ino, k.version, k.piece};
  return xxh3(&packed, 20);
}

// Where an entry is: 12 bytes; with the 8-byte key hash, a 24-byte slot of the index.
struct Loc {
  std::uint32_t region = 0;
  std::uint32_t offset = 0;  // of the header, from the region's start
  std::uint32_t length = 0;  // of the payload
};

// A region being filled, or written to its device.
struct Buffer {
  std::shared_ptr<char> data;
  std::uint32_t region = 0;
  std::uint32_t used = 0;
  std::vector<EntryRecord> entries;
};

// kSealing: handed to the sealer; written (its buffer free again) and waiting for its record.
enum class State : std::uint8_t { kFree, kOpen, kSealing, kSealed, kEvicting };

// A region written to its device, waiting to be made durable and recorded.
struct Written {
  std::uint32_t region = 0;
  std::uint64_t seq = 0;
  std::vector<EntryRecord> entries;
};

struct Region {
  State state = State::kFree;
  std::uint32_t generation = 0;  // changes when the region is freed: a read that raced sees it
  std::uint64_t sealSeq = 0;
  std::uint64_t lastAccess = 0;                     // a logical clock: the order of reads, for LRU
  bool accessDirty = false;                         // lastAccess not yet in the IndexDb
  std::chrono::steady_clock::time_point lastHit{};  // for kTraining
  std::uint64_t recorded = 0;                       // entries in its IndexDb record
  std::uint64_t liveBytes = 0;                      // of entries the index still points at
  Buffer* buffer = nullptr;                         // while kOpen, and kSealing until written
  std::vector<std::uint32_t> erasedWhileSealing;    // entry offsets to drop from its record
};

struct DeviceHealth {
  unsigned errorsInARow = 0;
  bool failed = false;
};

}  // namespace

struct RegionCache::Impl {
  Impl(std::vector<Device*> devs, IndexDb& database, RegionCacheOptions opts)
      : devices(std::move(devs)), db(database), options(std::move(opts)) {}

  std::vector<Device*> devices;
  std::vector<std::uint32_t> firstRegion;  // per device, and one past the last region at the end
  IndexDb& db;
  const RegionCacheOptions options;

  mutable std::mutex mu;
  std::condition_variable wake;        // the sealer: work to do
  std::condition_variable sealed;      // flush(): a seal finished
  std::condition_variable recordWake;  // the recorder: regions written
  absl::flat_hash_map<std::uint64_t, Loc> index;
  std::vector<Region> regions;
  std::vector<std::vector<std::uint32_t>> freeRegions;  // per device
  std::vector<DeviceHealth> health;                     // per device
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<Buffer*> idleBuffers;
  Buffer* open = nullptr;
  std::deque<Buffer*> toSeal;
  unsigned sealing = 0;  // regions the sealer has taken and not yet recorded (or given up)
  std::vector<Written> toRecord;
  std::uint64_t nextSeq = 1;
  std::uint64_t clock = 0;
  std::uint64_t recordedEntries = 0;
  std::chrono::steady_clock::time_point lastInsert{};
  bool evictionBlocked = false;  // kTraining found every region protected
  bool draining = false;         // above the high watermark, not yet down to the low one
  bool stopping = false;
  Status lastSealError;
  RegionCacheStats counters;
  std::thread sealer;
  std::thread recorder;

  Status layOut();
  Status load();
  std::optional<Bytes> lookup(const ChunkKey& key);
  bool insert(const ChunkKey& key, std::string_view bytes);
  void eraseLocked(std::uint64_t hash);
  void unrecordLocked(std::uint32_t r, const std::vector<std::uint32_t>& offsets);
  bool openRegionLocked();
  void handOffLocked();
  void runSealer();
  // The test hook simulates a crash before `step` (RegionCacheOptions::sealHook).
  bool crashesAt(SealStep step) const { return options.sealHook && !options.sealHook(step); }
  void write(Buffer* b);
  void runRecorder();
  void record(std::vector<Written>& batch);
  void finishSealLocked(const Written& w, const Status& s);
  bool needEvictionLocked();
  bool evictOne(std::unique_lock<std::mutex>& lock);
  std::optional<std::uint32_t> victimLocked() const;
  void freeRegionLocked(std::uint32_t r, const std::vector<EntryRecord>& entries);
  std::size_t deviceOf(std::uint32_t r) const;
  std::uint64_t deviceOffset(std::uint32_t r) const;
  void persistAccessTimes();
  void noteDeviceLocked(std::size_t d, bool ok);
};

// Counts a device's failures in a row; past the limit, the device is out of service.
void RegionCache::Impl::noteDeviceLocked(std::size_t d, bool ok) {
  DeviceHealth& h = health[d];
  if (ok || h.failed) {
    if (ok) h.errorsInARow = 0;
    return;
  }
  if (++h.errorsInARow < std::max(1u, options.deviceErrorLimit)) return;
  h.failed = true;
  spdlog::error(
      "cache: device {} failed {} times in a row: taken out of service (reads go to "
      "the back end)",
      devices[d]->name(), h.errorsInARow);
}

Status RegionCache::Impl::layOut() {
  if (devices.empty()) return Status::invalidArgument("a region cache needs a device");
  std::uint32_t next = 0;
  for (Device* d : devices) {
    if (options.regionSize % d->alignment() != 0) {
      return Status::invalidArgument(fmt::format("region size {} is not a multiple of {}'s {}",
                                                 options.regionSize, d->name(), d->alignment()));
    }
    firstRegion.push_back(next);
    std::vector<std::uint32_t> free;
    for (std::uint64_t i = 0; i < d->size() / options.regionSize; ++i) free.push_back(next++);
    std::reverse(free.begin(), free.end());  // taken from the back: lowest first
    freeRegions.push_back(std::move(free));
  }
  firstRegion.push_back(next);
  health.resize(devices.size());
  if (next == 0) {
    return Status::invalidArgument(
        fmt::format("the cache devices hold no region of {} bytes", options.regionSize));
  }
  regions.resize(next);
  for (unsigned i = 0; i < std::max(1u, options.buffers); ++i) {
    buffers.push_back(std::make_unique<Buffer>());
    buffers.back()->data = allocatePages(options.regionSize);
    idleBuffers.push_back(buffers.back().get());
  }
  return Status::ok();
}

// Brings the sealed regions recorded in the IndexDb back into the memory index.
Status RegionCache::Impl::load() {
  std::vector<std::uint32_t> damaged;
  TIERFS_RETURN_IF_ERROR(db.forEachRegion([&](const RegionRecord& rec, std::int64_t access) {
    const bool fits = rec.region < regions.size() &&
                      std::all_of(rec.entries.begin(), rec.entries.end(), [&](const auto& e) {
                        return e.offset + kHeaderSize + e.length <= options.regionSize;
                      });
    if (!fits) {  // not of this layout: the identity check should have wiped it
      damaged.push_back(rec.region);
      return Status::ok();
    }
    Region& g = regions[rec.region];
    g.state = State::kSealed;
    g.sealSeq = rec.sealSeq;
    g.lastAccess = static_cast<std::uint64_t>(std::max<std::int64_t>(access, 0));
    g.lastHit = std::chrono::steady_clock::now();
    g.recorded = rec.entries.size();
    recordedEntries += g.recorded;
    nextSeq = std::max(nextSeq, rec.sealSeq + 1);
    clock = std::max(clock, g.lastAccess);
    for (const EntryRecord& e : rec.entries) {
      auto [it, added] = index.try_emplace(keyHash(e.key), Loc{rec.region, e.offset, e.length});
      if (!added) {  // in two regions (written again after an erase): the later seal wins
        Region& other = regions[it->second.region];
        if (other.sealSeq > g.sealSeq) continue;
        other.liveBytes -= roundUp(kHeaderSize + it->second.length, kEntryAlign);
        it->second = Loc{rec.region, e.offset, e.length};
      }
      g.liveBytes += roundUp(kHeaderSize + e.length, kEntryAlign);
    }
    return Status::ok();
  }));
  for (std::uint32_t r : damaged) {
    spdlog::warn("cache: region record {} does not fit the devices; dropped", r);
    TIERFS_RETURN_IF_ERROR(db.dropRegion(r));
  }
  for (auto& free : freeRegions) {
    std::erase_if(free, [&](std::uint32_t r) { return regions[r].state != State::kFree; });
  }
  return Status::ok();
}

std::size_t RegionCache::Impl::deviceOf(std::uint32_t r) const {
  auto it = std::upper_bound(firstRegion.begin(), firstRegion.end(), r);
  return static_cast<std::size_t>(it - firstRegion.begin()) - 1;
}

std::uint64_t RegionCache::Impl::deviceOffset(std::uint32_t r) const {
  return std::uint64_t{r - firstRegion[deviceOf(r)]} * options.regionSize;
}

std::optional<Bytes> RegionCache::Impl::lookup(const ChunkKey& key) {
  const std::uint64_t hash = keyHash(key);
  std::unique_lock lock(mu);
  auto it = index.find(hash);
  if (it == index.end()) {
    ++counters.misses;
    return std::nullopt;
  }
  const Loc loc = it->second;
  Region& g = regions[loc.region];
  g.lastAccess = ++clock;
  g.accessDirty = true;
  g.lastHit = std::chrono::steady_clock::now();
  if (g.buffer) {  // not on the device yet
    EntryHeader h;
    std::memcpy(&h, g.buffer->data.get() + loc.offset, kHeaderSize);
    if (h.ino != key.ino || h.version != key.version || h.piece != key.piece) {
      ++counters.misses;  // another key with the same hash
      return std::nullopt;
    }
    ++counters.hits;
    return Bytes(std::string(g.buffer->data.get() + loc.offset + kHeaderSize, loc.length));
  }
  const std::uint32_t generation = g.generation;
  const std::size_t d = deviceOf(loc.region);
  if (health[d].failed) {
    ++counters.misses;
    return std::nullopt;
  }
  Device& dev = *devices[d];
  const std::uint64_t at = deviceOffset(loc.region) + loc.offset;
  lock.unlock();

  const std::uint64_t begin = at / dev.alignment() * dev.alignment();
  const std::uint64_t end = roundUp(at + kHeaderSize + loc.length, dev.alignment());
  // Page-aligned, as every pool's buffer: Linux keeps a device's logical blocks within a page.
  BufferPool& pool = options.readBuffers ? *options.readBuffers : BufferPool::unpooled();
  BufferPool::Buffer buf = pool.take(end - begin);
  Status read = dev.read(begin, buf.data(), end - begin);
  const char* entry = buf.data() + (at - begin);
  EntryHeader h;
  std::memcpy(&h, entry, kHeaderSize);
  const bool sound = read.isOk() && h.magic == kEntryMagic && h.length == loc.length &&
                     h.checksum == xxh3(entry + kHeaderSize, loc.length);
  const bool sameKey = h.ino == key.ino && h.version == key.version && h.piece == key.piece;

  lock.lock();
  if (regions[loc.region].generation != generation) {  // evicted while we read: a plain miss
    ++counters.misses;
    return std::nullopt;
  }
  noteDeviceLocked(d, sound);
  if (!sound || !sameKey) {
    if (sound) {
      ++counters.misses;  // another key with the same hash
    } else {
      ++counters.corruptions;
      ++counters.misses;
      spdlog::warn("cache: entry {} at {} offset {}: {}; dropped", key.objectName(), dev.name(), at,
                   read.isOk() ? "checksum mismatch" : read.message());
      auto cur = index.find(hash);
      if (cur != index.end() && cur->second.region == loc.region &&
          cur->second.offset == loc.offset) {
        eraseLocked(hash);
      }
    }
    return std::nullopt;
  }
  ++counters.hits;
  return std::move(buf).seal().slice(at - begin + kHeaderSize, loc.length);
}

bool RegionCache::Impl::insert(const ChunkKey& key, std::string_view bytes) {
  const std::uint64_t need = roundUp(kHeaderSize + bytes.size(), kEntryAlign);
  EntryHeader h{
      kEntryMagic, static_cast<std::uint32_t>(bytes.size()), key.ino, key.version, key.piece,
      0,           xxh3(bytes.data(), bytes.size())};
  const std::uint64_t hash = keyHash(key);
  std::lock_guard lock(mu);
  if (need > options.regionSize || stopping) {
    ++counters.notAdmitted;
    return false;
  }
  if (!open || open->used + need > options.regionSize) {
    if (open) handOffLocked();
    if (!openRegionLocked()) {
      ++counters.notAdmitted;
      return false;
    }
  }
  const std::uint32_t offset = open->used;
  std::memcpy(open->data.get() + offset, &h, kHeaderSize);
  std::memcpy(open->data.get() + offset + kHeaderSize, bytes.data(), bytes.size());
  open->used += static_cast<std::uint32_t>(need);
  open->entries.push_back(EntryRecord{key, offset, h.length, h.checksum});
  eraseLocked(hash);
  index[hash] = Loc{open->region, offset, h.length};
  regions[open->region].liveBytes += need;
  lastInsert = std::chrono::steady_clock::now();
  ++counters.inserted;
  return true;
}

// Forgets an entry, here and in what the IndexDb will hold of its region, so that it stays
// gone after a restart (an evicted tree, a damaged entry, a removed chunk).
void RegionCache::Impl::eraseLocked(std::uint64_t hash) {
  auto it = index.find(hash);
  if (it == index.end()) return;
  const Loc loc = it->second;
  Region& g = regions[loc.region];
  g.liveBytes -= roundUp(kHeaderSize + loc.length, kEntryAlign);
  index.erase(it);
  switch (g.state) {
    case State::kOpen:
      std::erase_if(g.buffer->entries,
                    [&](const EntryRecord& e) { return e.offset == loc.offset; });
      break;
    case State::kSealing:  // its record is being written: the sealer drops the entry after
      g.erasedWhileSealing.push_back(loc.offset);
      break;
    case State::kSealed:
      unrecordLocked(loc.region, {loc.offset});
      break;
    case State::kFree:
    case State::kEvicting:  // its record goes anyway
      break;
  }
}

// Rewrites a sealed region's record without the entries at `offsets`. Not synced: a record
// that lists fewer entries than the region holds is always true, and a crash that loses the
// rewrite only brings the entries back (their bytes are still there, checked on every read).
// Under mu, so that eviction cannot drop the record meanwhile (a rewrite after the drop would
// name a region about to be reused).
void RegionCache::Impl::unrecordLocked(std::uint32_t r, const std::vector<std::uint32_t>& offsets) {
  auto record = db.getRegion(r);
  if (!record || !*record) return;
  const std::size_t before = (*record)->entries.size();
  std::erase_if((*record)->entries, [&](const EntryRecord& e) {
    return std::find(offsets.begin(), offsets.end(), e.offset) != offsets.end();
  });
  const std::size_t removed = before - (*record)->entries.size();
  if (removed == 0) return;
  if (Status s = db.rewriteRegion(**record); !s.isOk()) {
    spdlog::warn("cache: dropping {} entries from region {}'s record: {}", removed, r,
                 s.toString());
    return;
  }
  regions[r].recorded -= removed;
  recordedEntries -= removed;
}

// A free region (on the device with the largest free share, so devices fill in proportion to
// their sizes) and an idle buffer become the open region; false when either is missing.
bool RegionCache::Impl::openRegionLocked() {
  if (idleBuffers.empty()) return false;
  std::size_t best = devices.size();
  double bestShare = 0;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    const double total = firstRegion[d + 1] - firstRegion[d];
    const double share = freeRegions[d].size() / total;
    if (!health[d].failed && !freeRegions[d].empty() && share > bestShare) {
      best = d, bestShare = share;
    }
  }
  if (best == devices.size()) {
    wake.notify_one();  // the sealer evicts
    return false;
  }
  const std::uint32_t r = freeRegions[best].back();
  freeRegions[best].pop_back();
  open = idleBuffers.back();
  idleBuffers.pop_back();
  open->region = r;
  open->used = 0;
  open->entries.clear();
  regions[r].state = State::kOpen;
  regions[r].buffer = open;
  regions[r].liveBytes = 0;
  if (needEvictionLocked()) wake.notify_one();  // keep a free region ready
  return true;
}

void RegionCache::Impl::handOffLocked() {
  regions[open->region].state = State::kSealing;
  toSeal.push_back(open);
  open = nullptr;
  wake.notify_one();
}

bool RegionCache::Impl::needEvictionLocked() {
  if (evictionBlocked) return false;
  if (recordedEntries > options.maxEntries) return true;
  std::size_t total = 0, free = 0;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    if (health[d].failed) continue;
    total += firstRegion[d + 1] - firstRegion[d];
    free += freeRegions[d].size();
  }
  if (total == 0) return false;
  if (free == 0) return true;  // every device in service is full
  // Between the watermarks, keep doing what was being done (evicting or not).
  const double used = static_cast<double>(total - free) / static_cast<double>(total);
  if (used > options.highWatermark) draining = true;
  if (used <= options.lowWatermark) draining = false;
  return draining;
}

void RegionCache::Impl::runSealer() {
  std::unique_lock lock(mu);
  for (;;) {
    auto tick =
        options.sealWhenIdle.count() > 0
            ? std::min<std::chrono::milliseconds>(options.sealWhenIdle, std::chrono::seconds(1))
            : std::chrono::milliseconds(1000);
    if (open && open->used > 0 && options.sealWhenIdle.count() > 0) {
      // Wake when the open region has been idle for sealWhenIdle, not up to a tick later (a
      // kill -9 in that tick would lose what the docs say survives).
      const auto due = std::chrono::ceil<std::chrono::milliseconds>(
          lastInsert + options.sealWhenIdle - std::chrono::steady_clock::now());
      tick = std::clamp(due, std::chrono::milliseconds(1), tick);
    }
    wake.wait_for(lock, tick,
                  [this] { return stopping || !toSeal.empty() || needEvictionLocked(); });
    if (open && open->used > 0 && options.sealWhenIdle.count() > 0 &&
        std::chrono::steady_clock::now() - lastInsert >= options.sealWhenIdle) {
      handOffLocked();
    }
    if (!toSeal.empty()) {
      Buffer* b = toSeal.front();
      toSeal.pop_front();
      ++sealing;
      lock.unlock();
      write(b);
      lock.lock();
    } else if (needEvictionLocked()) {
      if (!evictOne(lock)) evictionBlocked = true;
    } else if (stopping) {
      return;
    } else {
      evictionBlocked = false;  // a second went by: protection may have run out
    }
  }
}

// Sealing is two stages, so that a region buffer is busy only while its device writes it:
// the sealer writes a region and frees its buffer at once (the bytes are readable on the device
// from then on); the recorder then makes what was written durable (one flush a device) and
// records it (one synced RocksDB batch) for every region written meanwhile. A flush and a synced
// record cost as much as writing a 16 MiB region here, so paying them once a batch is what lets
// the cache keep up with a cold stream. A crash at any step leaves the IndexDb without the
// region (its entries absent after a restart), never pointing at bytes that were not durable.
void RegionCache::Impl::write(Buffer* b) {
  const std::uint32_t r = b->region;
  Device& dev = *devices[deviceOf(r)];
  const std::size_t length = roundUp(std::max<std::uint32_t>(b->used, 1), dev.alignment());
  std::memset(b->data.get() + b->used, 0, length - b->used);
  Written w{.region = r};
  {
    std::lock_guard lock(mu);
    w.seq = nextSeq++;
  }
  if (crashesAt(SealStep::kWrite)) {
    std::lock_guard lock(mu);
    --sealing;
    sealed.notify_all();
    return;
  }
  const Status s = dev.write(deviceOffset(r), b->data.get(), length);
  std::lock_guard lock(mu);
  w.entries = std::move(b->entries);
  regions[r].buffer = nullptr;
  idleBuffers.push_back(b);
  if (!s.isOk()) {
    noteDeviceLocked(deviceOf(r), false);
    finishSealLocked(w, s);
    return;
  }
  toRecord.push_back(std::move(w));
  recordWake.notify_one();
}

void RegionCache::Impl::runRecorder() {
  std::unique_lock lock(mu);
  for (;;) {
    recordWake.wait(lock, [this] { return stopping || !toRecord.empty(); });
    if (stopping) return;  // a clean stop has flushed everything; abandon() is a crash
    std::vector<Written> batch = std::exchange(toRecord, {});
    lock.unlock();
    record(batch);
    lock.lock();
  }
}

// Flushes the devices the batch was written to, then records the regions whose device flushed.
void RegionCache::Impl::record(std::vector<Written>& batch) {
  auto giveUp = [&] {  // the regions stay unrecorded
    std::lock_guard lock(mu);
    sealing -= static_cast<unsigned>(batch.size());
    sealed.notify_all();
  };
  if (crashesAt(SealStep::kFlush)) return giveUp();
  std::vector<std::optional<Status>> flushed(devices.size());
  for (const Written& w : batch) {
    auto& f = flushed[deviceOf(w.region)];
    if (!f) f = devices[deviceOf(w.region)]->flush();
  }
  if (crashesAt(SealStep::kRecord)) return giveUp();
  std::vector<RegionRecord> records;
  for (const Written& w : batch) {
    if (flushed[deviceOf(w.region)]->isOk()) records.push_back({w.region, w.seq, w.entries});
  }
  const Status recorded = records.empty() ? Status::ok() : db.putRegions(records);
  std::lock_guard lock(mu);
  for (std::size_t d = 0; d < devices.size(); ++d) {
    if (flushed[d]) noteDeviceLocked(d, flushed[d]->isOk());
  }
  for (const Written& w : batch) {
    const Status& f = *flushed[deviceOf(w.region)];
    finishSealLocked(w, f.isOk() ? recorded : f);
  }
}

void RegionCache::Impl::finishSealLocked(const Written& w, const Status& s) {
  const std::uint32_t r = w.region;
  --sealing;
  sealed.notify_all();
  if (!s.isOk()) {
    spdlog::error("cache: sealing region {} on {} failed: {}", r, devices[deviceOf(r)]->name(),
                  s.toString());
    lastSealError = s;
    freeRegionLocked(r, w.entries);
    return;
  }
  Region& g = regions[r];
  g.state = State::kSealed;
  g.sealSeq = w.seq;
  g.recorded = w.entries.size();
  g.lastHit = std::chrono::steady_clock::now();
  if (g.lastAccess == 0) g.lastAccess = ++clock;
  recordedEntries += g.recorded;
  if (!g.erasedWhileSealing.empty()) unrecordLocked(r, std::exchange(g.erasedWhileSealing, {}));
}

std::optional<std::uint32_t> RegionCache::Impl::victimLocked() const {
  const auto now = std::chrono::steady_clock::now();
  std::optional<std::uint32_t> best;
  for (std::uint32_t r = 0; r < regions.size(); ++r) {
    const Region& g = regions[r];
    if (g.state != State::kSealed || health[deviceOf(r)].failed) continue;
    if (options.eviction == EvictionPolicy::kTraining && now - g.lastHit < options.protectFor) {
      continue;
    }
    if (!best) {
      best = r;
      continue;
    }
    const Region& b = regions[*best];
    const bool older = options.eviction == EvictionPolicy::kFifo
                           ? g.sealSeq < b.sealSeq
                           : std::tie(g.lastAccess, g.sealSeq) < std::tie(b.lastAccess, b.sealSeq);
    if (older) best = r;
  }
  return best;
}

// Drops a region's record (synced) before its entries leave the index and it is reused.
bool RegionCache::Impl::evictOne(std::unique_lock<std::mutex>& lock) {
  std::optional<std::uint32_t> victim = victimLocked();
  if (!victim) return false;
  const std::uint32_t r = *victim;
  regions[r].state = State::kEvicting;
  lock.unlock();
  auto record = db.getRegion(r);
  Status dropped = record ? db.dropRegion(r) : record.error();
  lock.lock();
  if (!dropped.isOk()) {
    spdlog::error("cache: evicting region {} failed: {}", r, dropped.toString());
    regions[r].state = State::kSealed;
    return false;
  }
  recordedEntries -= regions[r].recorded;
  freeRegionLocked(r, *record ? (*record)->entries : std::vector<EntryRecord>{});
  ++counters.evictedRegions;
  return true;
}

void RegionCache::Impl::freeRegionLocked(std::uint32_t r, const std::vector<EntryRecord>& entries) {
  for (const EntryRecord& e : entries) {
    auto it = index.find(keyHash(e.key));
    if (it != index.end() && it->second.region == r && it->second.offset == e.offset) {
      index.erase(it);
    }
  }
  Region& g = regions[r];
  g = Region{.generation = g.generation + 1};
  freeRegions[deviceOf(r)].push_back(r);
}

void RegionCache::Impl::persistAccessTimes() {
  std::vector<std::pair<std::uint32_t, std::int64_t>> times;
  {
    std::lock_guard lock(mu);
    for (std::uint32_t r = 0; r < regions.size(); ++r) {
      if (regions[r].state != State::kSealed || !regions[r].accessDirty) continue;
      regions[r].accessDirty = false;
      times.emplace_back(r, static_cast<std::int64_t>(regions[r].lastAccess));
    }
  }
  if (times.empty()) return;
  if (Status s = db.putAccessTimes(times); !s.isOk()) {
    spdlog::warn("cache: could not keep the regions' access order: {}", s.toString());
  }
}

Result<std::unique_ptr<RegionCache>> RegionCache::open(std::vector<Device*> devices, IndexDb& db,
                                                       RegionCacheOptions options) {
  auto impl = std::make_unique<Impl>(std::move(devices), db, std::move(options));
  TIERFS_RETURN_IF_ERROR(impl->layOut());
  TIERFS_RETURN_IF_ERROR(impl->load());
  Impl* raw = impl.get();
  impl->sealer = std::thread([raw] { raw->runSealer(); });
  impl->recorder = std::thread([raw] { raw->runRecorder(); });
  return std::unique_ptr<RegionCache>(new RegionCache(std::move(impl)));
}

RegionCache::RegionCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RegionCache::~RegionCache() {
  if (!impl_->sealer.joinable()) return;  // abandoned
  if (Status s = flush(); !s.isOk()) spdlog::error("cache: at shutdown: {}", s.toString());
  impl_->persistAccessTimes();
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  impl_->recordWake.notify_all();
  impl_->sealer.join();
  impl_->recorder.join();
}

std::optional<Bytes> RegionCache::lookup(const ChunkKey& key) { return impl_->lookup(key); }

bool RegionCache::contains(const ChunkKey& key) const {
  std::lock_guard lock(impl_->mu);
  return impl_->index.contains(keyHash(key));
}

bool RegionCache::insert(const ChunkKey& key, std::string_view bytes) {
  return impl_->insert(key, bytes);
}

void RegionCache::erase(const ChunkKey& key) {
  std::lock_guard lock(impl_->mu);
  impl_->eraseLocked(keyHash(key));
}

Status RegionCache::flush() {
  std::unique_lock lock(impl_->mu);
  if (impl_->open && impl_->open->used > 0) impl_->handOffLocked();
  impl_->sealed.wait(lock, [this] { return impl_->toSeal.empty() && impl_->sealing == 0; });
  return std::exchange(impl_->lastSealError, Status::ok());
}

void RegionCache::abandon() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
    impl_->toSeal.clear();
  }
  impl_->wake.notify_all();
  impl_->recordWake.notify_all();
  if (impl_->sealer.joinable()) impl_->sealer.join();
  if (impl_->recorder.joinable()) impl_->recorder.join();
}

RegionCacheStats RegionCache::stats() const {
  std::lock_guard lock(impl_->mu);
  RegionCacheStats s = impl_->counters;
  s.entries = impl_->index.size();
  s.recordedEntries = impl_->recordedEntries;
  s.capacityBytes = std::uint64_t{impl_->regions.size()} * impl_->options.regionSize;
  for (const Region& g : impl_->regions) {
    if (g.state == State::kSealed || g.state == State::kEvicting) {
      ++s.sealedRegions;
      s.usedBytes += g.liveBytes;
    }
  }
  s.indexMemoryBytes = impl_->index.capacity() * (sizeof(std::pair<std::uint64_t, Loc>) + 1);
  for (const DeviceHealth& h : impl_->health) s.failedDevices += h.failed;
  return s;
}

std::vector<DeviceUsage> RegionCache::deviceUsage() const {
  std::lock_guard lock(impl_->mu);
  std::vector<DeviceUsage> usage(impl_->devices.size());
  for (std::size_t d = 0; d < usage.size(); ++d) {
    usage[d].name = impl_->devices[d]->name();
    const std::uint64_t regions = impl_->firstRegion[d + 1] - impl_->firstRegion[d];
    usage[d].capacityBytes = regions * impl_->options.regionSize;
    usage[d].failed = impl_->health[d].failed;
  }
  for (std::uint32_t r = 0; r < impl_->regions.size(); ++r) {
    const Region& g = impl_->regions[r];
    if (g.state == State::kSealed || g.state == State::kEvicting) {
      usage[impl_->deviceOf(r)].usedBytes += g.liveBytes;
    }
  }
  return usage;
}

}  // namespace tierfs::cache
