#include "fs/FileWriter.h"

#include <algorithm>

namespace tierfs::fs {

void FileWriter::SlotBuffer::put(std::uint32_t at, std::string_view bytes) {
  const auto end = static_cast<std::uint32_t>(at + bytes.size());
  if (at == data.size()) {
    data.append(bytes);  // a stream: nothing to zero first
  } else {
    if (data.size() < end) data.resize(end);
    std::copy(bytes.begin(), bytes.end(), data.begin() + at);
  }
  // Insert [at, end) and merge everything it touches.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> merged;
  std::pair<std::uint32_t, std::uint32_t> add{at, end};
  for (const auto& c : covered) {
    if (c.second < add.first || c.first > add.second) {
      merged.push_back(c);
    } else {
      add = {std::min(add.first, c.first), std::max(add.second, c.second)};
    }
  }
  merged.push_back(add);
  std::sort(merged.begin(), merged.end());
  covered = std::move(merged);
}

void FileWriter::SlotBuffer::clip(std::uint32_t end) {
  std::erase_if(covered, [end](const auto& c) { return c.first >= end; });
  if (!covered.empty()) covered.back().second = std::min(covered.back().second, end);
  data.resize(std::min<std::size_t>(data.size(), end));
}

FileWriter::FileWriter(WriterContext ctx, const Inode& base)
    : ctx_(ctx), ino_(base.ino), chunkSize_(ctx.volume.record().chunkSize), base_(base) {
  recomputeViewLocked();
}

FileWriter::~FileWriter() {
  waitForUploads();  // their callbacks refer to this
  std::lock_guard lock(mu_);
  setUnflushedLocked(0);
}

std::uint64_t FileWriter::uploadedStoredBytes() const {
  std::lock_guard lock(mu_);
  return storedBytes_;
}

void FileWriter::waitForUploads() {
  std::unique_lock lock(mu_);
  uploadDone_.wait(lock, [this] { return inFlight_ == 0; });
}

void FileWriter::setUnflushedLocked(std::uint64_t bytes) {
  // Unsigned arithmetic wraps, so adding the difference also takes away.
  if (ctx_.unflushedTotal) ctx_.unflushedTotal->fetch_add(bytes - unflushedBytes_);
  unflushedBytes_ = bytes;
}

Status FileWriter::write(std::uint64_t offset, std::string_view data) {
  std::unique_lock lock(mu_);
  const std::uint64_t failuresBefore = failures_;
  while (unflushedBytes_ >= ctx_.dirtyLimit) {  // wait for uploads to make room
    // An upload failed meanwhile (its bytes are kept): report it rather than retry while the
    // store does not answer, which would hold this write for as long as the outage lasts.
    if (failures_ != failuresBefore) return uploadError_;
    startUploadsLocked(UINT64_MAX, lock);
    if (inFlight_ == 0) break;  // nothing left to upload (an upload failed): do not wait
    uploadDone_.wait(lock);
  }
  std::uint64_t pos = offset;
  while (!data.empty()) {
    const std::uint64_t slot = pos / chunkSize_;
    const auto at = static_cast<std::uint32_t>(pos % chunkSize_);
    const std::size_t n = std::min<std::uint64_t>(data.size(), chunkSize_ - at);
    writeSlotLocked(slot, at, data.substr(0, n));
    data.remove_prefix(n);
    pos += n;
  }
  viewSize_ = std::max(viewSize_, pos);
  // Slots behind the write position are done (a stream has moved on): upload them now. A full
  // slot at the position is done too.
  std::uint64_t doneBelow = pos / chunkSize_;
  auto full = dirty_.find(doneBelow);
  if (full != dirty_.end() && full->second.covered.size() == 1 && full->second.lo() == 0 &&
      full->second.hi() == chunkSize_) {
    ++doneBelow;
  }
  if (unflushedBytes_ >= ctx_.dirtyLimit) doneBelow = UINT64_MAX;  // memory is short: all
  startUploadsLocked(doneBelow, lock);
  return Status::ok();
}

void FileWriter::writeSlotLocked(std::uint64_t slot, std::uint32_t at, std::string_view bytes) {
  SlotBuffer& buf = dirty_[slot];
  const std::size_t before = buf.data.size();
  // A stream that has filled a quarter of the slot is likely to fill it: room for all of it at
  // once, not a reallocation (and a copy) each time the buffer doubles.
  if (at == before && at + bytes.size() > chunkSize_ / 4 && buf.data.capacity() < chunkSize_) {
    buf.data.reserve(chunkSize_);
  }
  buf.put(at, bytes);
  setUnflushedLocked(unflushedBytes_ + buf.data.size() - before);
}

void FileWriter::startUploadsLocked(std::uint64_t belowSlot, std::unique_lock<std::mutex>& lock) {
  std::vector<std::uint64_t> slots;
  for (const auto& [slot, buf] : dirty_) {
    if (slot < belowSlot && !uploading_.count(slot)) slots.push_back(slot);
  }
  for (std::uint64_t slot : slots) {
    (void)startUploadLocked(slot, lock);  // a failure is recorded by finishUploadLocked
  }
}

// Moves a slot's buffer to uploading_ and sends it as one chunk covering [lo, hi) of the slot.
// The journal gets one run per written range, all in that chunk: the gaps between them are not
// the writer's, so a commit replayed over another node's must not put old bytes back there.
Status FileWriter::startUploadLocked(std::uint64_t slot, std::unique_lock<std::mutex>& lock) {
  // Another thread may have started this slot while startUploadsLocked let go of the lock; its
  // newer bytes wait for that upload to finish.
  if (uploading_.count(slot)) return Status::ok();
  auto node = dirty_.extract(slot);
  if (node.empty() || node.mapped().covered.empty()) return Status::ok();
  SlotBuffer& buf = uploading_.insert(std::move(node)).position->second;
  ++inFlight_;
  const std::uint64_t buffered = buf.data.size();
  const std::uint64_t slotStart = slot * chunkSize_;
  const std::uint64_t start = slotStart + buf.lo();
  // The upload and this node's readers share the buffer (no copy) unless it holds much more
  // room than bytes, which the memory cache would then keep for nothing.
  const std::size_t length = buf.hi() - buf.lo();
  Bytes bytes;  // gaps: zeros, unused
  if (buf.data.capacity() - length <= length / 8) {
    buf.sent = Bytes(std::move(buf.data));
    buf.data = std::string();
    bytes = buf.sent.slice(buf.lo(), length);
  } else {
    bytes = Bytes(buf.data.substr(buf.lo(), length));
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> covered = buf.covered;
  bool needVersion = chunkVersion_ == 0;
  lock.unlock();
  Status status;
  std::uint64_t version = 0;
  if (needVersion) {
    auto id = ctx_.volume.newId();
    status = statusOf(id);
    if (id) version = *id;
  }
  lock.lock();
  if (version != 0 && chunkVersion_ == 0) chunkVersion_ = version;
  if (!status.isOk()) {
    finishUploadLocked(slot, {}, buffered, status);
    return status;
  }
  const std::uint32_t piece = nextPiece_++;
  std::vector<Extent> runs;
  for (const auto& [lo, hi] : covered) {
    runs.push_back({slotStart + lo, hi - lo, chunkVersion_, piece, start});
  }
  cache::ChunkKey key{ino_, chunkVersion_, piece};
  lock.unlock();
  ctx_.cache.write(key, std::move(bytes), [this, slot, runs, buffered](Result<std::uint64_t> r) {
    std::lock_guard guard(mu_);
    if (r) storedBytes_ += *r;
    finishUploadLocked(slot, runs, buffered, statusOf(r));
  });
  lock.lock();
  return Status::ok();
}

void FileWriter::finishUploadLocked(std::uint64_t slot, const std::vector<Extent>& runs,
                                    std::uint64_t bytes, Status status) {
  if (status.isOk()) {
    for (const Extent& run : runs) {
      journal_.emplace_back(run);
      ctx_.reader.chunkMap().overlay(view_, run);
    }
    uploading_.erase(slot);
    setUnflushedLocked(unflushedBytes_ - std::min(unflushedBytes_, bytes));
  } else {
    uploadError_ = status;
    ++failures_;
    keepFailedLocked(slot);
  }
  --inFlight_;
  uploadDone_.notify_all();
}

// A failed upload's bytes go back to the slot's buffer, under any written since (which are
// newer), so that the next drain uploads them again: an acknowledged write is never dropped
// because the store failed once.
void FileWriter::keepFailedLocked(std::uint64_t slot) {
  auto failed = uploading_.extract(slot);
  if (failed.empty()) return;
  SlotBuffer merged = std::move(failed.mapped());
  if (!merged.sent.empty()) {  // writable again
    merged.data = std::string(merged.sent.view());
    merged.sent = Bytes();
  }
  std::uint64_t counted = merged.data.size();
  if (auto newer = dirty_.find(slot); newer != dirty_.end()) {
    counted += newer->second.data.size();
    for (const auto& [lo, hi] : newer->second.covered) {
      merged.put(lo, std::string_view(newer->second.data).substr(lo, hi - lo));
    }
    dirty_.erase(newer);
  }
  const std::uint64_t kept = merged.data.size();
  dirty_.emplace(slot, std::move(merged));
  setUnflushedLocked(unflushedBytes_ - std::min(unflushedBytes_, counted) + kept);
}

Status FileWriter::truncate(std::uint64_t size) {
  std::unique_lock lock(mu_);
  // Uploads in flight would land after the truncation; let them land first.
  uploadDone_.wait(lock, [this] { return inFlight_ == 0; });
  for (auto it = dirty_.begin(); it != dirty_.end();) {
    const std::uint64_t slotStart = it->first * chunkSize_;
    if (slotStart >= size) {
      setUnflushedLocked(unflushedBytes_ -
                         std::min(unflushedBytes_, std::uint64_t{it->second.data.size()}));
      it = dirty_.erase(it);
      continue;
    }
    if (slotStart + it->second.data.size() > size) {
      it->second.clip(static_cast<std::uint32_t>(size - slotStart));
    }
    ++it;
  }
  std::erase_if(dirty_, [](const auto& e) { return e.second.covered.empty(); });
  journal_.emplace_back(size);
  ChunkMap::truncate(view_, size);
  viewSize_ = size;
  return Status::ok();
}

Result<std::string> FileWriter::read(std::uint64_t offset, std::uint64_t length) {
  std::unique_lock lock(mu_);
  if (offset >= viewSize_) return std::string();
  std::string out(std::min(length, viewSize_ - offset), '\0');
  std::vector<Extent> view = view_;
  // Buffered bytes are copied now, so the result is one moment of the file even if an upload
  // lands (and leaves the buffers) while the stored part is read below.
  std::vector<Patch> patches = patchesLocked(offset, out.size());
  lock.unlock();
  TIERFS_RETURN_IF_ERROR(ctx_.reader.readInto(ino_, view, offset, out));
  for (const Patch& p : patches)
    std::copy(p.bytes.begin(), p.bytes.end(), out.begin() + (p.at - offset));
  return out;
}

// The buffered bytes within [offset, offset + length): uploading ones first, then newer ones.
std::vector<FileWriter::Patch> FileWriter::patchesLocked(std::uint64_t offset,
                                                         std::uint64_t length) const {
  std::vector<Patch> out;
  const std::uint64_t end = offset + length;
  for (const auto* buffers : {&uploading_, &dirty_}) {
    for (const auto& [slot, buf] : *buffers) {
      const std::uint64_t slotStart = slot * chunkSize_;
      for (const auto& [lo, hi] : buf.covered) {
        const std::uint64_t a = std::max(offset, slotStart + lo);
        const std::uint64_t b = std::min(end, slotStart + hi);
        if (a < b) out.push_back({a, std::string(buf.bytes().substr(a - slotStart, b - a))});
      }
    }
  }
  return out;
}

std::uint64_t FileWriter::size() const {
  std::lock_guard lock(mu_);
  return viewSize_;
}

bool FileWriter::hasChanges() const {
  std::lock_guard lock(mu_);
  return !journal_.empty() || !dirty_.empty() || inFlight_ > 0;
}

Status FileWriter::drain() {
  std::unique_lock lock(mu_);
  // Bytes of uploads that failed before are in dirty_ again and are retried now; the drain
  // fails if one of its own uploads fails (their bytes are kept for the next drain).
  uploadError_ = Status::ok();
  const std::uint64_t failuresBefore = failures_;
  for (;;) {
    if (failures_ != failuresBefore) {  // no retry within one drain: let the others end
      uploadDone_.wait(lock, [this] { return inFlight_ == 0; });
      break;
    }
    startUploadsLocked(UINT64_MAX, lock);  // a slot whose older upload is in flight waits
    if (dirty_.empty() && inFlight_ == 0) break;
    // startUploadsLocked lets go of the lock: the uploads a slot waited for may all have finished
    // meanwhile, and then no upload is left to wake us. Start that slot in the next round.
    if (inFlight_ > 0) uploadDone_.wait(lock);
  }
  Status s = uploadError_;
  uploadError_ = Status::ok();
  return s;
}

FileWriter::Changes FileWriter::changes() const {
  std::lock_guard lock(mu_);
  return {journal_.size(), journal_};
}

void FileWriter::committed(const Changes& changes, const Inode& inode) {
  std::lock_guard lock(mu_);
  journal_.erase(journal_.begin(), journal_.begin() + static_cast<std::ptrdiff_t>(changes.mark));
  base_ = inode;
  std::uint64_t buffered = viewSize_;
  recomputeViewLocked();
  viewSize_ = std::max(viewSize_, buffered);
}

void FileWriter::replay(const ChunkMap& map,
                        const std::vector<std::variant<Extent, std::uint64_t>>& ops, Inode& inode) {
  for (const auto& op : ops) {
    if (const Extent* run = std::get_if<Extent>(&op)) {
      map.overlay(inode.extents, *run);
      inode.size = std::max(inode.size, run->end());
    } else {
      inode.size = std::get<std::uint64_t>(op);
      ChunkMap::truncate(inode.extents, inode.size);
    }
  }
}

void FileWriter::recomputeViewLocked() {
  Inode v = base_;
  replay(ctx_.reader.chunkMap(), journal_, v);
  view_ = std::move(v.extents);
  viewSize_ = v.size;
}

}  // namespace tierfs::fs
