#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/Result.h"
#include "common/Status.h"

// A cache device: a fixed-size range of bytes on local storage (a preallocated file or a block
// device) read and written in aligned units. The region cache (cache/RegionCache.h) is its only
// user; it writes whole regions and reads entries.
namespace tierfs::cache {

class Device {
 public:
  virtual ~Device() = default;

  // Usable bytes: [0, size()). A multiple of alignment().
  virtual std::uint64_t size() const = 0;
  // What offsets, lengths and buffer addresses of read/write must be multiples of (4096 for
  // O_DIRECT).
  virtual std::uint32_t alignment() const = 0;

  // Blocking calls, safe from any number of threads at once. `offset`, `length` and `buf` are
  // aligned; the range lies within size(). A short transfer is retried to the end; what fails
  // is an IoError naming the device, the offset and the errno (InvalidArgument for a bad range).
  virtual Status write(std::uint64_t offset, const void* buf, std::size_t length) = 0;
  virtual Status read(std::uint64_t offset, void* buf, std::size_t length) = 0;
  // Makes every write that returned before this call durable (fdatasync for a file).
  virtual Status flush() = 0;

  // For logs and errors: the path, or "memory".
  virtual const std::string& name() const = 0;

 protected:
  // InvalidArgument naming the device and what is wrong unless offset, length and buffer are
  // aligned and the range lies within size(): what write() and read() check first.
  Status checkRange(std::string_view op, std::uint64_t offset, const void* buf,
                    std::size_t length) const;
};

// A cache file (created and preallocated with fallocate to `size` if needed, so the cache
// never fails for lack of space on the host filesystem later) or a block device (size 0: the
// device's size), opened O_DIRECT and driven through io_uring.
struct FileDeviceOptions {
  std::string path;
  std::uint64_t size = 0;    // bytes; rounded down to the alignment
  unsigned queueDepth = 64;  // entries of the ring
  std::size_t maxIoSize =
      1 << 20;  // a longer transfer is split into I/Os of this size, submitted together
};
Result<std::unique_ptr<Device>> openFileDevice(const FileDeviceOptions& options);

// Whether `path` names a device rather than a cache file: a block device, or any name in /dev's
// own filesystem (a missing or mistyped device must not become a file there). Filesystems
// mounted under /dev (/dev/shm) hold cache files like any other.
bool namesDevice(const std::string& path);

// A device in memory, for tests: it can drop the writes that no flush() made durable (a crash)
// and fail the next I/Os (an injected error).
class MemoryDevice : public Device {
 public:
  explicit MemoryDevice(std::uint64_t size, std::uint32_t alignment = 4096);
  ~MemoryDevice() override;

  std::uint64_t size() const override;
  std::uint32_t alignment() const override;
  Status write(std::uint64_t offset, const void* buf, std::size_t length) override;
  Status read(std::uint64_t offset, void* buf, std::size_t length) override;
  Status flush() override;
  const std::string& name() const override;

  // A crash: every write since the last flush() is undone.
  void dropUnflushed();
  // The next `count` reads (writes) fail with IoError.
  void failReads(int count);
  void failWrites(int count);
  // Flips one bit of the stored bytes (a media error the device does not report).
  void corrupt(std::uint64_t offset);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tierfs::cache
