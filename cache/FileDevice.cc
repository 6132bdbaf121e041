// The cache device on local storage: a preallocated file or a block device, opened O_DIRECT (the
// cache manages its own memory; the page cache would hold every region twice) and driven through
// one io_uring.
//
// How a call travels:
//  - read()/write() split the range into pieces of at most maxIoSize (one SQE each) and describe
//    the call by a Call (pieces outstanding, first error, a condition variable to wait on).
//  - Under submitMutex_, the caller takes one "slot" per piece (at most depth_ pieces are in the
//    kernel at once), prepares the SQEs and hands them all to the kernel with one io_uring_submit,
//    then waits on its Call.
//  - One reaper thread waits for CQEs. A piece that moved fewer bytes than asked (short transfer),
//    or failed with EAGAIN/EINTR, is prepared again for the rest of its range by the reaper itself;
//    a piece that is done or failed gives its slot back and counts down its Call; the last piece
//    wakes the caller.
// Limiting the pieces in flight to depth_ keeps the submission queue (depth_ entries or more) from
// filling up and the completion queue (twice as large) from overflowing, so the reaper never has to
// wait for room and no CQE is ever left in the kernel's overflow list.

#include <fcntl.h>
#include <fmt/format.h>
#include <liburing.h>
#include <linux/fs.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "cache/Device.h"
#include "common/FileUtil.h"

namespace tierfs::cache {
namespace {

// O_DIRECT needs offsets, lengths and buffers aligned to the logical block size; 4096 covers every
// common device and filesystem and matches the page size, so it is the minimum we ask for.
constexpr std::uint32_t kMinAlignment = 4096;
// The biggest ring we accept; larger rings buy nothing for a cache device and pin kernel memory.
constexpr unsigned kMaxQueueDepth = 4096;
// A CQE's result is an int: no single transfer may come near 2 GiB (Linux caps one at
// 0x7ffff000 bytes anyway).
constexpr std::size_t kMaxIoCap = std::size_t{1} << 30;
// EAGAIN/EINTR retries of one piece in a row before it is reported as failed, so that a device
// that keeps answering EAGAIN cannot keep the reaper busy forever.
constexpr int kMaxRetries = 1000;
// The user_data of the NOP that tells the reaper to stop; pieces use their address, never 1.
constexpr std::uint64_t kStopToken = 1;

std::uint64_t roundDown(std::uint64_t value, std::uint64_t unit) { return value - value % unit; }

std::string errnoText(int err) { return std::strerror(err); }

// Small io_urings for the reads a thread waits for: one io_uring_enter submits them and waits on
// the same thread, where the shared ring's reaper would have to wake the caller. Device hits are
// read this way on FUSE threads: a shuffled epoch of 4,000 small files from the device ran ~14%
// faster for a quarter less daemon CPU on this VM (docs/BENCHMARKS.md).
//
// The rings live in a process-wide pool that outlives every thread: a thread takes one on its
// first read and gives it back when it exits. So a ring is set up once per reader running at the
// same time, not once per thread, and the hand-over under the pool's mutex orders one thread's
// use of a ring before the next's. (Rings unmapped at thread exit and mapped again at the same
// address looked like a data race to ThreadSanitizer, which cannot see liburing's mmap calls.)
class CallersRings {
 public:
  static constexpr unsigned kDepth = 8;

  // The calling thread's ring; null when the kernel refuses one (the shared ring serves then).
  static io_uring* mine() {
    thread_local Lease lease;
    return lease.ring;
  }

 private:
  struct Pool {
    std::mutex mu;
    std::vector<io_uring*> idle;  // rings no thread holds; each empty (no I/O in flight)
  };
  struct Lease {
    Lease() : ring(take()) {}
    ~Lease() {
      if (ring == nullptr) return;
      std::lock_guard lock(pool().mu);
      pool().idle.push_back(ring);
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    io_uring* const ring;
  };

  // Never destroyed: a thread may exit (and give its ring back) after static destructors ran.
  static Pool& pool() {
    static Pool* const instance = new Pool;
    return *instance;
  }
  static io_uring* take() {
    {
      std::lock_guard lock(pool().mu);
      if (!pool().idle.empty()) {
        io_uring* ring = pool().idle.back();
        pool().idle.pop_back();
        return ring;
      }
    }
    auto ring = std::make_unique<io_uring>();
    if (io_uring_queue_init(kDepth, ring.get(), 0) != 0) return nullptr;
    return ring.release();
  }
};

class FileDevice final : public Device {
 public:
  static Result<std::unique_ptr<Device>> open(const FileDeviceOptions& options);
  ~FileDevice() override;

  std::uint64_t size() const override { return size_; }
  std::uint32_t alignment() const override { return alignment_; }
  Status write(std::uint64_t offset, const void* buf, std::size_t length) override;
  Status read(std::uint64_t offset, void* buf, std::size_t length) override;
  Status flush() override;
  const std::string& name() const override { return path_; }

 private:
  enum class Op : std::uint8_t { kRead, kWrite, kFsync };

  // One blocking read/write/flush call; lives on the caller's stack until every piece is done.
  struct Call {
    std::mutex mutex;
    std::condition_variable done;
    std::size_t pending = 0;  // pieces not finished yet
    Status status;            // the first error of any piece
  };

  // One SQE's worth of a call. `offset`, `buf` and `remaining` move forward after a short
  // transfer, so they always describe what is still to do.
  struct Piece {
    Call* call = nullptr;
    Op op = Op::kRead;
    std::uint64_t offset = 0;
    char* buf = nullptr;  // for a write, only read from (the ring takes a non-const pointer)
    std::uint32_t remaining = 0;
    int retries = 0;  // EAGAIN/EINTR answers in a row
  };

  explicit FileDevice(const FileDeviceOptions& options);

  Status validateOptions();
  Status setUpRing();
  Status openFile();
  Status setUpBlockDevice();
  Status setUpRegularFile(const struct stat& st, bool created);

  // The pieces of at most maxIo_ bytes a transfer is made of.
  std::vector<Piece> piecesOf(Op op, std::uint64_t offset, char* buf, std::size_t length,
                              Call* call) const;
  Status transfer(Op op, std::uint64_t offset, char* buf, std::size_t length);
  Status run(Call& call, std::vector<Piece>& pieces);
  // A read on the calling thread's own ring (CallersRings), start to finish.
  Status readOnCallersRing(io_uring& ring, std::uint64_t offset, char* buf, std::size_t length);

  // Preparing and submitting SQEs on `ring`; on the shared ring_ they need submitMutex_.
  void prepare(io_uring& ring, Piece& piece);
  io_uring_sqe* getSqe(io_uring& ring);
  void submit(io_uring& ring);
  void prepareLocked(Piece& piece) { prepare(ring_, piece); }
  void submitLocked() { submit(ring_); }

  void reap();
  // Handles the CQE of a piece: submits the rest again, or finishes the piece.
  void complete(Piece& piece, int res);
  // Moves a piece past the `res` of its CQE. The piece's final status, or nullopt when it must
  // be submitted again (a short transfer, EAGAIN/EINTR).
  std::optional<Status> advance(Piece& piece, int res) const;
  Status pieceError(const Piece& piece, int err) const;
  [[noreturn]] void fatal(std::string_view what, int err) const;

  const FileDeviceOptions options_;
  const std::string path_;
  UniqueFd fd_;
  std::uint64_t size_ = 0;
  std::uint32_t alignment_ = kMinAlignment;
  std::size_t maxIo_ = 0;

  io_uring ring_{};
  bool ringReady_ = false;
  std::thread reaper_;

  // Serializes getting, preparing and submitting SQEs (the submission queue has one producer at a
  // time) and guards inflight_.
  std::mutex submitMutex_;
  std::condition_variable slotFree_;
  unsigned depth_ = 0;     // pieces allowed in the kernel at once
  unsigned inflight_ = 0;  // pieces prepared and not finished
};

FileDevice::FileDevice(const FileDeviceOptions& options)
    : options_(options), path_(options.path), depth_(options.queueDepth) {}

Result<std::unique_ptr<Device>> FileDevice::open(const FileDeviceOptions& options) {
  std::unique_ptr<FileDevice> device(new FileDevice(options));
  TIERFS_RETURN_IF_ERROR(device->validateOptions());
  // The ring first: where io_uring is not allowed, nothing is created on disk.
  TIERFS_RETURN_IF_ERROR(device->setUpRing());
  TIERFS_RETURN_IF_ERROR(device->openFile());
  device->reaper_ = std::thread([d = device.get()] { d->reap(); });
  return std::unique_ptr<Device>(std::move(device));
}

FileDevice::~FileDevice() {
  if (reaper_.joinable()) {
    {
      std::unique_lock lock(submitMutex_);
      // Nobody may call a device that is being destroyed, but a piece could still be on its way
      // out of the reaper; its slot comes back last.
      slotFree_.wait(lock, [&] { return inflight_ == 0; });
      // Wake the reaper out of io_uring_wait_cqe with a CQE it recognizes.
      io_uring_sqe* sqe = getSqe(ring_);
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data64(sqe, kStopToken);
      submitLocked();
    }
    reaper_.join();
  }
  if (ringReady_) io_uring_queue_exit(&ring_);
  // fd_ closes itself.
}

Status FileDevice::validateOptions() {
  if (path_.empty()) return Status::invalidArgument("cache device: no path given");
  if (options_.queueDepth == 0 || options_.queueDepth > kMaxQueueDepth) {
    return Status::invalidArgument(
        fmt::format("cache device {}: queue depth {} is not between 1 and {}", path_,
                    options_.queueDepth, kMaxQueueDepth));
  }
  if (options_.maxIoSize < kMinAlignment) {
    return Status::invalidArgument(
        fmt::format("cache device {}: maximum I/O size {} is less than {} bytes", path_,
                    options_.maxIoSize, kMinAlignment));
  }
  return Status::ok();
}

Status FileDevice::setUpRing() {
  // No flags: in particular no IORING_SETUP_COOP_TASKRUN/DEFER_TASKRUN, because completions may
  // need task work on the submitting thread, which sleeps on a condition variable and only runs
  // that work when the kernel interrupts it.
  const int ret = io_uring_queue_init(options_.queueDepth, &ring_, 0);
  if (ret < 0) {
    const int err = -ret;
    const std::string msg = fmt::format(
        "cache device {}: cannot set up an io_uring of {} entries: {} (io_uring may be disabled "
        "by kernel.io_uring_disabled, a seccomp profile of the container, or RLIMIT_MEMLOCK)",
        path_, options_.queueDepth, errnoText(err));
    if (err == EPERM || err == EACCES) return Status::permissionDenied(msg);
    if (err == ENOSYS) return Status::notSupported(msg);
    return Status::ioError(msg);
  }
  ringReady_ = true;
  return Status::ok();
}

Status FileDevice::openFile() {
  struct stat st {};
  bool existed = true;
  if (::stat(path_.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::fromErrno(errno, fmt::format("cache device {}", path_));
    existed = false;
  }
  const bool block = existed && S_ISBLK(st.st_mode);
  // A mistyped device name would otherwise become a file in /dev's memory filesystem.
  if (!existed && namesDevice(path_)) {
    return Status::notFound(fmt::format("cache device {}: no such device", path_));
  }
  if (!block && roundDown(options_.size, kMinAlignment) == 0) {
    return Status::invalidArgument(
        fmt::format("cache file {}: size {} is less than {} bytes (a cache file needs a size)",
                    path_, options_.size, kMinAlignment));
  }

  // A block device is opened O_EXCL, which makes the open fail with EBUSY while the device is
  // mounted or otherwise in use: the cache must never write over a filesystem. A file is created
  // 0600: the cache holds the users' data, which other users must not read.
  const int flags = O_RDWR | O_DIRECT | O_CLOEXEC | (block ? O_EXCL : O_CREAT);
  fd_ = UniqueFd(::open(path_.c_str(), flags, 0600));
  if (!fd_.valid()) {
    const int err = errno;
    const std::string what = fmt::format("opening cache device {}", path_);
    if (err == EINVAL) {
      return Status::invalidArgument(
          fmt::format("{}: {} (does its filesystem support O_DIRECT?)", what, errnoText(err)));
    }
    if (err == EBUSY) {
      return Status::unavailable(
          fmt::format("{}: {} (is it mounted or used by another program?)", what, errnoText(err)));
    }
    return Status::fromErrno(err, what);
  }
  if (::fstat(fd_.get(), &st) != 0) {
    return Status::fromErrno(errno, fmt::format("cache device {}: fstat", path_));
  }
  if (S_ISBLK(st.st_mode)) return setUpBlockDevice();
  if (S_ISREG(st.st_mode)) {
    // An older cache file may have been created readable by others.
    if ((st.st_mode & 077) != 0) {
      if (::fchmod(fd_.get(), 0600) != 0) {
        return Status::fromErrno(errno, fmt::format("cache device {}: chmod 0600", path_));
      }
      spdlog::warn("cache device {} was mode {:04o}: changed to 0600", path_, st.st_mode & 07777);
    }
    return setUpRegularFile(st, !existed);
  }
  return Status::invalidArgument(
      fmt::format("cache device {} is neither a regular file nor a block device", path_));
}

Status FileDevice::setUpBlockDevice() {
  std::uint64_t deviceBytes = 0;
  if (::ioctl(fd_.get(), BLKGETSIZE64, &deviceBytes) != 0) {
    return Status::ioError(
        fmt::format("cache device {}: BLKGETSIZE64: {}", path_, errnoText(errno)));
  }
  int logicalBlock = 0;
  if (::ioctl(fd_.get(), BLKSSZGET, &logicalBlock) != 0) {
    return Status::ioError(fmt::format("cache device {}: BLKSSZGET: {}", path_, errnoText(errno)));
  }
  alignment_ = std::max<std::uint32_t>(kMinAlignment, static_cast<std::uint32_t>(logicalBlock));
  std::uint64_t bytes = deviceBytes;
  if (options_.size != 0) {
    // Asking for more than the device holds is a configuration mistake worth hearing about.
    if (options_.size > deviceBytes) {
      return Status::invalidArgument(
          fmt::format("cache device {}: size {} is larger than the device ({} bytes)", path_,
                      options_.size, deviceBytes));
    }
    bytes = options_.size;
  }
  size_ = roundDown(bytes, alignment_);
  if (size_ == 0) {
    return Status::invalidArgument(fmt::format(
        "cache device {}: {} bytes is less than one block of {} bytes", path_, bytes, alignment_));
  }
  maxIo_ = std::max<std::size_t>(alignment_,
                                 roundDown(std::min(options_.maxIoSize, kMaxIoCap), alignment_));
  return Status::ok();
}

Status FileDevice::setUpRegularFile(const struct stat& st, bool created) {
  alignment_ = kMinAlignment;
  size_ = roundDown(options_.size, alignment_);
  maxIo_ = roundDown(std::min(options_.maxIoSize, kMaxIoCap), alignment_);
  // A file we made and could not set up is removed, not left behind half allocated.
  auto fail = [&](Status s) {
    if (created) ::unlink(path_.c_str());
    return s;
  };
  // A smaller configured cache gives the rest of a bigger old file back to the host filesystem.
  if (static_cast<std::uint64_t>(st.st_size) > size_ && ::ftruncate(fd_.get(), size_) != 0) {
    return fail(Status::fromErrno(
        errno, fmt::format("truncating cache file {} to {} bytes", path_, size_)));
  }
  // Reserve every block now, so that the cache never meets ENOSPC on the host filesystem later;
  // blocks already written keep their data.
  if (::fallocate(fd_.get(), 0, 0, static_cast<off_t>(size_)) != 0) {
    return fail(Status::fromErrno(
        errno, fmt::format("preallocating {} bytes for cache file {}", size_, path_)));
  }
  return Status::ok();
}

Status FileDevice::write(std::uint64_t offset, const void* buf, std::size_t length) {
  TIERFS_RETURN_IF_ERROR(checkRange("write", offset, buf, length));
  // The ring takes a non-const pointer for both directions; a write only reads from it.
  return transfer(Op::kWrite, offset, const_cast<char*>(static_cast<const char*>(buf)), length);
}

Status FileDevice::read(std::uint64_t offset, void* buf, std::size_t length) {
  TIERFS_RETURN_IF_ERROR(checkRange("read", offset, buf, length));
  if (length > 0 && length <= CallersRings::kDepth * maxIo_) {
    if (io_uring* ring = CallersRings::mine()) {
      return readOnCallersRing(*ring, offset, static_cast<char*>(buf), length);
    }
  }
  return transfer(Op::kRead, offset, static_cast<char*>(buf), length);
}

Status FileDevice::flush() {
  // The O_DIRECT writes that returned are on the device but perhaps in its volatile cache, and the
  // extents that fallocate left unwritten are converted by metadata updates: fdatasync commits
  // both.
  Call call;
  std::vector<Piece> pieces(1);
  pieces[0].call = &call;
  pieces[0].op = Op::kFsync;
  return run(call, pieces);
}

std::vector<FileDevice::Piece> FileDevice::piecesOf(Op op, std::uint64_t offset, char* buf,
                                                    std::size_t length, Call* call) const {
  std::vector<Piece> pieces;
  pieces.reserve((length + maxIo_ - 1) / maxIo_);
  for (std::size_t done = 0; done < length;) {
    const std::size_t n = std::min(maxIo_, length - done);
    pieces.push_back(Piece{.call = call,
                           .op = op,
                           .offset = offset + done,
                           .buf = buf + done,
                           .remaining = static_cast<std::uint32_t>(n)});
    done += n;
  }
  return pieces;
}

Status FileDevice::transfer(Op op, std::uint64_t offset, char* buf, std::size_t length) {
  if (length == 0) return Status::ok();
  Call call;
  std::vector<Piece> pieces = piecesOf(op, offset, buf, length, &call);
  return run(call, pieces);
}

Status FileDevice::readOnCallersRing(io_uring& ring, std::uint64_t offset, char* buf,
                                     std::size_t length) {
  std::vector<Piece> pieces = piecesOf(Op::kRead, offset, buf, length, nullptr);
  for (Piece& piece : pieces) prepare(ring, piece);
  // One system call submits them and waits for the first; a failed one leaves them queued.
  if (io_uring_submit_and_wait(&ring, 1) < 0) submit(ring);
  Status status;
  for (std::size_t pending = pieces.size(); pending > 0;) {
    io_uring_cqe* cqe = nullptr;
    const int ret = io_uring_wait_cqe(&ring, &cqe);
    if (ret == -EINTR || ret == -EAGAIN) continue;
    if (ret < 0) fatal("io_uring_wait_cqe", -ret);  // the kernel still holds our buffers
    Piece& piece =
        *reinterpret_cast<Piece*>(static_cast<std::uintptr_t>(io_uring_cqe_get_data64(cqe)));
    const int res = cqe->res;
    io_uring_cqe_seen(&ring, cqe);
    std::optional<Status> outcome = advance(piece, res);
    if (!outcome) {  // the rest of a short read, or a transient error: again
      prepare(ring, piece);
      submit(ring);
      continue;
    }
    if (status.isOk() && !outcome->isOk()) status = std::move(*outcome);
    --pending;
  }
  return status;
}

Status FileDevice::run(Call& call, std::vector<Piece>& pieces) {
  call.pending = pieces.size();
  {
    std::unique_lock lock(submitMutex_);
    for (Piece& piece : pieces) {
      if (inflight_ >= depth_) {
        // Out of slots: let the kernel start what is prepared so far, then wait for pieces (ours
        // or other callers') to finish. Waiting releases the mutex for the reaper.
        submitLocked();
        slotFree_.wait(lock, [&] { return inflight_ < depth_; });
      }
      ++inflight_;
      prepareLocked(piece);
    }
    // All pieces of the call (or the rest of them) in one io_uring_enter.
    submitLocked();
  }
  std::unique_lock lock(call.mutex);
  call.done.wait(lock, [&] { return call.pending == 0; });
  return call.status;
}

io_uring_sqe* FileDevice::getSqe(io_uring& ring) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  if (sqe == nullptr) {
    // Cannot happen while at most depth_ pieces are in flight, but a full queue only means the
    // kernel has not taken the prepared entries yet: hand them over and there is room.
    submit(ring);
    sqe = io_uring_get_sqe(&ring);
    if (sqe == nullptr) fatal("io_uring_get_sqe after submitting the whole queue", EBUSY);
  }
  return sqe;
}

void FileDevice::prepare(io_uring& ring, Piece& piece) {
  io_uring_sqe* sqe = getSqe(ring);
  switch (piece.op) {
    case Op::kRead:
      io_uring_prep_read(sqe, fd_.get(), piece.buf, piece.remaining, piece.offset);
      break;
    case Op::kWrite:
      io_uring_prep_write(sqe, fd_.get(), piece.buf, piece.remaining, piece.offset);
      break;
    case Op::kFsync:
      io_uring_prep_fsync(sqe, fd_.get(), IORING_FSYNC_DATASYNC);
      break;
  }
  io_uring_sqe_set_data64(sqe, reinterpret_cast<std::uintptr_t>(&piece));
}

void FileDevice::submit(io_uring& ring) {
  while (io_uring_sq_ready(&ring) > 0) {
    const int ret = io_uring_submit(&ring);
    if (ret > 0) continue;
    // Transient: the kernel could not allocate request memory (EAGAIN), completions are backed up
    // (EBUSY), or a signal arrived. The entries stay in the queue; try again shortly.
    if (ret == 0 || ret == -EAGAIN || ret == -EBUSY || ret == -EINTR) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      continue;
    }
    // The prepared entries point into callers' buffers and cannot be taken back out of the
    // queue; carrying on could let the kernel write into memory that is reused by then.
    fatal("io_uring_submit", -ret);
  }
}

void FileDevice::reap() {
  pthread_setname_np(pthread_self(), "tierfs-uring");
  for (;;) {
    io_uring_cqe* cqe = nullptr;
    const int ret = io_uring_wait_cqe(&ring_, &cqe);
    if (ret == -EINTR || ret == -EAGAIN) continue;
    // Nothing could complete the waiting callers any more.
    if (ret < 0) fatal("io_uring_wait_cqe", -ret);
    const std::uint64_t userData = io_uring_cqe_get_data64(cqe);
    const int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    if (userData == kStopToken) return;
    complete(*reinterpret_cast<Piece*>(static_cast<std::uintptr_t>(userData)), res);
  }
}

void FileDevice::complete(Piece& piece, int res) {
  Status status;
  {
    // The piece is read and changed under the mutex its submitter held while submitting it. The
    // kernel already orders the two threads, but only through the ring, which thread sanitizers
    // cannot see; the mutex makes the order explicit at no real cost.
    std::lock_guard lock(submitMutex_);
    std::optional<Status> outcome = advance(piece, res);
    if (!outcome) {
      // The rest of the piece goes again in the same slot, so this never waits for one (which
      // would deadlock: only this thread gives slots back).
      prepareLocked(piece);
      submitLocked();
      return;
    }
    status = std::move(*outcome);
    --inflight_;
  }
  slotFree_.notify_all();
  Call& call = *piece.call;
  // Notify while holding the call's mutex: once it is released with pending == 0 the caller may
  // return and destroy the Call (and the piece).
  std::lock_guard lock(call.mutex);
  if (call.status.isOk() && !status.isOk()) call.status = std::move(status);
  if (--call.pending == 0) call.done.notify_one();
}

std::optional<Status> FileDevice::advance(Piece& piece, int res) const {
  if (res < 0) {
    // EAGAIN/EINTR are transient: try again (a bounded number of times, so a device that keeps
    // saying EAGAIN cannot spin the reaper forever).
    if ((res == -EAGAIN || res == -EINTR) && ++piece.retries <= kMaxRetries) return std::nullopt;
    return pieceError(piece, -res);
  }
  if (piece.op == Op::kFsync) return Status::ok();
  if (res == 0) {
    // No progress and no error: the file or device is shorter than it was when opened (someone
    // truncated it). Retrying would spin.
    return Status::ioError(fmt::format(
        "cache device {}: {} of {} bytes at {}: no bytes transferred (device or file shorter "
        "than expected?)",
        path_, piece.op == Op::kRead ? "read" : "write", piece.remaining, piece.offset));
  }
  // A short transfer: carry on from where it stopped.
  const auto moved = static_cast<std::uint32_t>(std::min<std::int64_t>(res, piece.remaining));
  piece.offset += moved;
  piece.buf += moved;
  piece.remaining -= moved;
  piece.retries = 0;
  if (piece.remaining > 0) return std::nullopt;
  return Status::ok();
}

Status FileDevice::pieceError(const Piece& piece, int err) const {
  if (piece.op == Op::kFsync) {
    return Status::ioError(fmt::format("cache device {}: fdatasync: {}", path_, errnoText(err)));
  }
  return Status::ioError(fmt::format("cache device {}: {} of {} bytes at {}: {}", path_,
                                     piece.op == Op::kRead ? "read" : "write", piece.remaining,
                                     piece.offset, errnoText(err)));
}

void FileDevice::fatal(std::string_view what, int err) const {
  spdlog::critical("cache device {}: {} failed: {}; the io_uring is unusable", path_, what,
                   errnoText(err));
  std::abort();
}

}  // namespace

Result<std::unique_ptr<Device>> openFileDevice(const FileDeviceOptions& options) {
  return FileDevice::open(options);
}

bool namesDevice(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) return true;
  struct stat dir {};
  struct stat dev {};
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return ::stat(parent.c_str(), &dir) == 0 && ::stat("/dev", &dev) == 0 && dir.st_dev == dev.st_dev;
}

}  // namespace tierfs::cache
