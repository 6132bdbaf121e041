#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cache/Device.h"
#include "cache/FaultyDevice.h"
#include "tests/support/Assertions.h"
#include "tests/support/TempDir.h"

namespace tierfs::testing {
namespace {

using cache::Device;
using cache::FileDeviceOptions;
using cache::MemoryDevice;
using cache::openFileDevice;

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * kKiB;
constexpr std::size_t kBlock = 4096;

// Memory aligned for O_DIRECT, freed with free().
struct FreeDeleter {
  void operator()(unsigned char* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<unsigned char[], FreeDeleter>;

Buffer alignedBuffer(std::size_t n) {
  const std::size_t rounded = (n + kBlock - 1) / kBlock * kBlock;
  auto* p =
      static_cast<unsigned char*>(std::aligned_alloc(kBlock, rounded == 0 ? kBlock : rounded));
  if (p == nullptr) std::abort();
  std::memset(p, 0, rounded);
  return Buffer(p);
}

void fillRandom(unsigned char* p, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t word = rng();
    std::memcpy(p + i, &word, std::min<std::size_t>(8, n - i));
  }
}

Buffer randomBuffer(std::size_t n, std::uint64_t seed) {
  Buffer b = alignedBuffer(n);
  fillRandom(b.get(), n, seed);
  return b;
}

bool sameBytes(const unsigned char* a, const unsigned char* b, std::size_t n) {
  return std::memcmp(a, b, n) == 0;
}

// Reads a file through the page cache, independently of the device under test, to check what a
// write put where.
std::string readPlain(const std::filesystem::path& path, std::uint64_t offset, std::size_t length) {
  std::string out(length, '\0');
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "open failed";
  const ssize_t n = ::pread(fd, out.data(), length, static_cast<off_t>(offset));
  ::close(fd);
  if (n != static_cast<ssize_t>(length)) return "short pread";
  return out;
}

std::string asString(const unsigned char* p, std::size_t n) {
  return std::string(reinterpret_cast<const char*>(p), n);
}

// The argument checks both devices make.
void expectBadArgumentsRejected(Device& device) {
  const std::uint64_t size = device.size();
  Buffer buf = alignedBuffer(2 * kBlock);
  EXPECT_CODE(device.write(1, buf.get(), kBlock), StatusCode::kInvalidArgument);
  EXPECT_CODE(device.read(kBlock / 2, buf.get(), kBlock), StatusCode::kInvalidArgument);
  EXPECT_CODE(device.write(0, buf.get(), 100), StatusCode::kInvalidArgument);
  EXPECT_CODE(device.read(0, buf.get(), kBlock + 1), StatusCode::kInvalidArgument);
  EXPECT_CODE(device.write(0, buf.get() + 1, kBlock), StatusCode::kInvalidArgument);
  EXPECT_CODE(device.read(0, buf.get() + 512, kBlock), StatusCode::kInvalidArgument);
  // Out of range: starting at the end, crossing it, and an offset whose end would wrap around.
  EXPECT_CODE(device.read(size, buf.get(), kBlock), StatusCode::kInvalidArgument);
  EXPECT_CODE(device.write(size - kBlock, buf.get(), 2 * kBlock), StatusCode::kInvalidArgument);
  const std::uint64_t huge = std::numeric_limits<std::uint64_t>::max() / kBlock * kBlock;
  EXPECT_CODE(device.read(huge, buf.get(), 2 * kBlock), StatusCode::kInvalidArgument);
  EXPECT_CODE(device.read(kBlock, buf.get(), kBlock), StatusCode::kOk);
  // The message says what was wrong.
  const Status s = device.read(4097, buf.get(), kBlock);
  EXPECT_NE(s.message().find("offset"), std::string::npos) << s.toString();
  const Status r = device.read(size, buf.get(), kBlock);
  EXPECT_NE(r.message().find("size"), std::string::npos) << r.toString();
}

// ---- MemoryDevice ----

TEST(MemoryDeviceTest, WriteThenReadReturnsTheData) {
  MemoryDevice device(1 * kMiB);
  EXPECT_EQ(device.size(), 1 * kMiB);
  EXPECT_EQ(device.alignment(), 4096u);
  EXPECT_EQ(device.name(), "memory");
  Buffer data = randomBuffer(3 * kBlock, 1);
  ASSERT_OK(device.write(5 * kBlock, data.get(), 3 * kBlock));
  Buffer back = alignedBuffer(3 * kBlock);
  ASSERT_OK(device.read(5 * kBlock, back.get(), 3 * kBlock));
  EXPECT_TRUE(sameBytes(data.get(), back.get(), 3 * kBlock));
  // The neighbouring blocks were not touched.
  Buffer before = randomBuffer(kBlock, 2);
  ASSERT_OK(device.read(4 * kBlock, before.get(), kBlock));
  EXPECT_EQ(asString(before.get(), kBlock), std::string(kBlock, '\0'));
}

TEST(MemoryDeviceTest, SizeIsRoundedDownToTheAlignment) {
  MemoryDevice device(10000, 4096);
  EXPECT_EQ(device.size(), 8192u);
  MemoryDevice small(10000, 512);
  EXPECT_EQ(small.size(), 9728u);
  EXPECT_EQ(small.alignment(), 512u);
}

TEST(MemoryDeviceTest, DropUnflushedUndoesOnlyWritesSinceTheLastFlush) {
  MemoryDevice device(64 * kBlock);
  Buffer a = randomBuffer(2 * kBlock, 10);
  Buffer b = randomBuffer(2 * kBlock, 11);
  Buffer c = randomBuffer(kBlock, 12);
  ASSERT_OK(device.write(0, a.get(), 2 * kBlock));
  ASSERT_OK(device.flush());
  // Overwrite a flushed range twice and write a fresh one, none of it flushed.
  ASSERT_OK(device.write(kBlock, b.get(), 2 * kBlock));
  ASSERT_OK(device.write(kBlock, c.get(), kBlock));
  ASSERT_OK(device.write(10 * kBlock, c.get(), kBlock));
  Buffer back = alignedBuffer(3 * kBlock);
  ASSERT_OK(device.read(kBlock, back.get(), kBlock));
  EXPECT_TRUE(sameBytes(back.get(), c.get(), kBlock));  // visible before the crash

  device.dropUnflushed();
  ASSERT_OK(device.read(0, back.get(), 3 * kBlock));
  EXPECT_TRUE(sameBytes(back.get(), a.get(), 2 * kBlock));
  EXPECT_EQ(asString(back.get() + 2 * kBlock, kBlock), std::string(kBlock, '\0'));
  ASSERT_OK(device.read(10 * kBlock, back.get(), kBlock));
  EXPECT_EQ(asString(back.get(), kBlock), std::string(kBlock, '\0'));

  // Flushed writes survive a crash.
  ASSERT_OK(device.write(20 * kBlock, b.get(), 2 * kBlock));
  ASSERT_OK(device.flush());
  device.dropUnflushed();
  ASSERT_OK(device.read(20 * kBlock, back.get(), 2 * kBlock));
  EXPECT_TRUE(sameBytes(back.get(), b.get(), 2 * kBlock));
}

TEST(MemoryDeviceTest, InjectedErrorsFailTheNextCallsThenStop) {
  MemoryDevice device(16 * kBlock);
  Buffer data = randomBuffer(kBlock, 20);
  Buffer back = alignedBuffer(kBlock);
  ASSERT_OK(device.write(0, data.get(), kBlock));

  device.failReads(2);
  EXPECT_CODE(device.read(0, back.get(), kBlock), StatusCode::kIoError);
  EXPECT_CODE(device.read(0, back.get(), kBlock), StatusCode::kIoError);
  ASSERT_OK(device.read(0, back.get(), kBlock));
  EXPECT_TRUE(sameBytes(back.get(), data.get(), kBlock));

  Buffer other = randomBuffer(kBlock, 21);
  device.failWrites(1);
  const Status s = device.write(0, other.get(), kBlock);
  EXPECT_CODE(s, StatusCode::kIoError);
  EXPECT_NE(s.message().find("memory"), std::string::npos) << s.toString();
  ASSERT_OK(device.read(0, back.get(), kBlock));
  EXPECT_TRUE(sameBytes(back.get(), data.get(), kBlock));  // the failed write changed nothing
  ASSERT_OK(device.write(0, other.get(), kBlock));
  ASSERT_OK(device.read(0, back.get(), kBlock));
  EXPECT_TRUE(sameBytes(back.get(), other.get(), kBlock));
}

TEST(MemoryDeviceTest, CorruptFlipsExactlyOneBit) {
  MemoryDevice device(16 * kBlock);
  Buffer data = randomBuffer(4 * kBlock, 30);
  ASSERT_OK(device.write(0, data.get(), 4 * kBlock));
  ASSERT_OK(device.flush());
  device.corrupt(5000);
  Buffer back = alignedBuffer(4 * kBlock);
  ASSERT_OK(device.read(0, back.get(), 4 * kBlock));
  int flippedBits = 0;
  for (std::size_t i = 0; i < 4 * kBlock; ++i) {
    const int bits = std::popcount(static_cast<unsigned>(data[i] ^ back[i]));
    if (bits != 0) {
      EXPECT_EQ(i, 5000u);
    }
    flippedBits += bits;
  }
  EXPECT_EQ(flippedBits, 1);
}

TEST(MemoryDeviceTest, CorruptionOfTheMediumSurvivesACrash) {
  MemoryDevice device(16 * kBlock);
  Buffer flushed = randomBuffer(kBlock, 40);
  Buffer unflushed = randomBuffer(kBlock, 41);
  ASSERT_OK(device.write(0, flushed.get(), kBlock));
  ASSERT_OK(device.flush());
  ASSERT_OK(device.write(0, unflushed.get(), kBlock));
  device.corrupt(100);
  device.dropUnflushed();
  Buffer back = alignedBuffer(kBlock);
  ASSERT_OK(device.read(0, back.get(), kBlock));
  EXPECT_EQ(back[100], flushed[100] ^ 1);
  back[100] ^= 1;
  EXPECT_TRUE(sameBytes(back.get(), flushed.get(), kBlock));
}

TEST(MemoryDeviceTest, RejectsMisalignedAndOutOfRangeArguments) {
  MemoryDevice device(64 * kBlock);
  expectBadArgumentsRejected(device);
}

// ---- FileDevice (real io_uring, O_DIRECT on a file in a temporary directory) ----

class FileDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Where io_uring is forbidden (kernel.io_uring_disabled, a container's seccomp profile), the
    // device cannot work at all: say so instead of failing every test.
    auto probe = open("probe", kBlock);
    if (!probe && probe.error().message().find("io_uring") != std::string::npos) {
      GTEST_SKIP() << "io_uring is not available here: " << probe.error().toString();
    }
    ASSERT_OK(probe);
  }

  Result<std::unique_ptr<Device>> open(const std::string& name, std::uint64_t size,
                                       unsigned queueDepth = 64, std::size_t maxIoSize = 1 * kMiB) {
    return openFileDevice(FileDeviceOptions{
        .path = path(name), .size = size, .queueDepth = queueDepth, .maxIoSize = maxIoSize});
  }

  std::string path(const std::string& name) const { return (dir_.path() / name).string(); }

  struct stat statOf(const std::string& name) const {
    struct stat st {};
    EXPECT_EQ(::stat(path(name).c_str(), &st), 0) << name;
    return st;
  }

  // Writes `length` random bytes at `offset` in one call, reads them back in one call and through
  // the page cache.
  void roundTrip(Device& device, const std::string& name, std::uint64_t offset,
                 std::size_t length) {
    Buffer data = randomBuffer(length, offset + length);
    ASSERT_OK(device.write(offset, data.get(), length));
    Buffer back = alignedBuffer(length);
    ASSERT_OK(device.read(offset, back.get(), length));
    EXPECT_TRUE(sameBytes(data.get(), back.get(), length));
    EXPECT_TRUE(readPlain(path(name), offset, length) == asString(data.get(), length))
        << "the file does not hold the written bytes at " << offset;
  }

  TempDir dir_;
};

TEST_F(FileDeviceTest, CreatesAPreallocatedPrivateFile) {
  auto device = open("cache", 64 * kMiB);
  ASSERT_OK(device);
  EXPECT_EQ((*device)->size(), 64 * kMiB);
  EXPECT_EQ((*device)->alignment(), 4096u);
  EXPECT_EQ((*device)->name(), path("cache"));
  const struct stat st = statOf("cache");
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), 64 * kMiB);
  EXPECT_GE(static_cast<std::uint64_t>(st.st_blocks) * 512, 64 * kMiB) << "not preallocated";
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

// Whatever the umask, and whatever mode an existing cache file had: other users read nothing.
TEST_F(FileDeviceTest, IsPrivateWhateverTheUmaskAndTightensAnOpenFile) {
  const mode_t old = ::umask(0);
  auto fresh = open("fresh", 4 * kMiB);
  ::umask(old);
  ASSERT_OK(fresh);
  EXPECT_EQ(statOf("fresh").st_mode & 07777, 0600u);
  std::ofstream(path("open")) << "old";
  ASSERT_EQ(::chmod(path("open").c_str(), 0666), 0);
  auto reopened = open("open", 4 * kMiB);
  ASSERT_OK(reopened);
  EXPECT_EQ(statOf("open").st_mode & 07777, 0600u);
}

TEST_F(FileDeviceTest, SizeIsRoundedDownToTheAlignment) {
  auto device = open("cache", 1 * kMiB + 100);
  ASSERT_OK(device);
  EXPECT_EQ((*device)->size(), 1 * kMiB);
  EXPECT_EQ(static_cast<std::uint64_t>(statOf("cache").st_size), 1 * kMiB);
}

TEST_F(FileDeviceTest, UnwrittenSpaceReadsAsZeros) {
  auto device = open("cache", 4 * kMiB);
  ASSERT_OK(device);
  Buffer back = randomBuffer(2 * kMiB, 50);
  ASSERT_OK((*device)->read(kMiB, back.get(), 2 * kMiB));
  EXPECT_EQ(asString(back.get(), 2 * kMiB), std::string(2 * kMiB, '\0'));
}

TEST_F(FileDeviceTest, LargeTransferIsSplitAndRoundTrips) {
  // 16 MiB in one call: sixteen 1 MiB I/Os submitted together.
  auto device = open("cache", 32 * kMiB);
  ASSERT_OK(device);
  roundTrip(**device, "cache", 3 * kBlock, 16 * kMiB);
}

TEST_F(FileDeviceTest, LargeTransferWithAShallowQueueWaitsForSlots) {
  // 64 I/Os of 256 KiB through a ring of 4: the call must wait for its own first I/Os to finish.
  auto device = open("cache", 32 * kMiB, 4, 256 * kKiB);
  ASSERT_OK(device);
  roundTrip(**device, "cache", 16 * kMiB - kBlock, 16 * kMiB);
  // A length that is not a multiple of the I/O size.
  roundTrip(**device, "cache", 0, 256 * kKiB + 3 * kBlock);
}

TEST_F(FileDeviceTest, ReadsRoundTripOnTheCallersRingAndOnTheShared) {
  // Reads of at most 8 I/Os are submitted and reaped on the calling thread's own ring; longer
  // ones on the device's. Both split, carry on after short reads and round-trip.
  auto device = open("cache", 4 * kMiB, 64, 64 * kKiB);
  ASSERT_OK(device);
  roundTrip(**device, "cache", kBlock, 7 * 64 * kKiB + 3 * kBlock);  // 8 I/Os: the caller's
  roundTrip(**device, "cache", 2 * kMiB, 8 * 64 * kKiB + kBlock);    // 9 I/Os: the shared ring
  std::thread other([&] { roundTrip(**device, "cache", kMiB, 64 * kKiB); });  // another thread's
  other.join();
}

TEST_F(FileDeviceTest, ConcurrentCallsFromManyThreads) {
  constexpr int kThreads = 32;
  constexpr int kRounds = 8;
  constexpr std::size_t kRange = 256 * kKiB;
  // A small ring and small I/Os, so that threads compete for slots and calls are split.
  auto opened = open("cache", kThreads * kRange, 8, 64 * kKiB);
  ASSERT_OK(opened);
  Device& device = **opened;
  const auto seedOf = [](int thread, int round) {
    return static_cast<std::uint64_t>(thread) * 1000 + round;
  };

  std::atomic<int> failures{0};
  std::mutex messagesMutex;
  std::vector<std::string> messages;
  const auto fail = [&](std::string msg) {
    ++failures;
    std::lock_guard lock(messagesMutex);
    messages.push_back(std::move(msg));
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::uint64_t offset = t * kRange;
      Buffer data = alignedBuffer(kRange);
      Buffer back = alignedBuffer(kRange);
      Buffer neighbour = alignedBuffer(kRange);
      for (int round = 0; round < kRounds; ++round) {
        fillRandom(data.get(), kRange, seedOf(t, round));
        if (Status s = device.write(offset, data.get(), kRange); !s.isOk()) {
          return fail(s.toString());
        }
        if (Status s = device.read(offset, back.get(), kRange); !s.isOk()) {
          return fail(s.toString());
        }
        if (!sameBytes(data.get(), back.get(), kRange)) {
          return fail("thread " + std::to_string(t) + " read back other bytes");
        }
        // A read of a range another thread is writing right now: must succeed (the contents are
        // whatever it finds).
        const std::uint64_t other = ((t + 1) % kThreads) * kRange;
        if (Status s = device.read(other, neighbour.get(), kRange); !s.isOk()) {
          return fail(s.toString());
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0) << (messages.empty() ? "" : messages.front());

  // Every range holds its thread's last round, through the device and in the file.
  Buffer expected = alignedBuffer(kRange);
  Buffer back = alignedBuffer(kRange);
  for (int t = 0; t < kThreads; ++t) {
    fillRandom(expected.get(), kRange, seedOf(t, kRounds - 1));
    ASSERT_OK(device.read(t * kRange, back.get(), kRange));
    EXPECT_TRUE(sameBytes(expected.get(), back.get(), kRange)) << "range of thread " << t;
    EXPECT_TRUE(readPlain(path("cache"), t * kRange, kRange) == asString(expected.get(), kRange))
        << "range of thread " << t;
  }
}

TEST_F(FileDeviceTest, DataSurvivesReopen) {
  Buffer data = randomBuffer(3 * kMiB, 60);
  {
    auto device = open("cache", 8 * kMiB);
    ASSERT_OK(device);
    ASSERT_OK((*device)->write(2 * kMiB, data.get(), 3 * kMiB));
    ASSERT_OK((*device)->flush());
  }
  auto device = open("cache", 8 * kMiB);
  ASSERT_OK(device);
  Buffer back = alignedBuffer(3 * kMiB);
  ASSERT_OK((*device)->read(2 * kMiB, back.get(), 3 * kMiB));
  EXPECT_TRUE(sameBytes(data.get(), back.get(), 3 * kMiB));
}

TEST_F(FileDeviceTest, ABiggerExistingFileIsTruncatedAndKeepsItsData) {
  const std::string bytes(kMiB, 'x');
  {
    std::ofstream out(path("cache"), std::ios::binary);
    for (int i = 0; i < 16; ++i) out.write(bytes.data(), static_cast<std::streamsize>(kMiB));
  }
  ASSERT_EQ(static_cast<std::uint64_t>(statOf("cache").st_size), 16 * kMiB);
  auto device = open("cache", 4 * kMiB);
  ASSERT_OK(device);
  EXPECT_EQ((*device)->size(), 4 * kMiB);
  EXPECT_EQ(static_cast<std::uint64_t>(statOf("cache").st_size), 4 * kMiB);
  Buffer back = alignedBuffer(kMiB);
  ASSERT_OK((*device)->read(3 * kMiB, back.get(), kMiB));
  EXPECT_EQ(asString(back.get(), kMiB), bytes);
}

TEST_F(FileDeviceTest, ASmallerExistingFileGrows) {
  {
    auto device = open("cache", 1 * kMiB);
    ASSERT_OK(device);
  }
  auto device = open("cache", 8 * kMiB);
  ASSERT_OK(device);
  const struct stat st = statOf("cache");
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), 8 * kMiB);
  EXPECT_GE(static_cast<std::uint64_t>(st.st_blocks) * 512, 8 * kMiB);
}

TEST_F(FileDeviceTest, SizeZeroIsInvalidAndCreatesNothing) {
  EXPECT_CODE(open("cache", 0), StatusCode::kInvalidArgument);
  EXPECT_CODE(open("cache", 100), StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(path("cache")));
}

TEST_F(FileDeviceTest, BadOptionsAreInvalid) {
  EXPECT_CODE(open("cache", kMiB, 0), StatusCode::kInvalidArgument);
  EXPECT_CODE(open("cache", kMiB, 64, 100), StatusCode::kInvalidArgument);
  EXPECT_CODE(openFileDevice(FileDeviceOptions{.size = kMiB}), StatusCode::kInvalidArgument);
}

TEST_F(FileDeviceTest, MissingDirectoryIsAnErrorNamingThePath) {
  auto device = open("no-such-dir/cache", kMiB);
  ASSERT_FALSE(device);
  EXPECT_CODE(device, StatusCode::kNotFound);
  EXPECT_NE(device.error().message().find(path("no-such-dir/cache")), std::string::npos)
      << device.error().toString();
}

// A mistyped device name is an error, not a new file in /dev's memory filesystem; a filesystem
// mounted under /dev (/dev/shm, memory) holds cache files like any other.
TEST_F(FileDeviceTest, AMissingDeviceIsNotCreatedButAFileUnderDevShmIs) {
  const std::string mistyped = "/dev/tierfs-test-no-such-device";
  auto device = openFileDevice(FileDeviceOptions{.path = mistyped, .size = kMiB});
  EXPECT_CODE(device, StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(mistyped));
  EXPECT_TRUE(cache::namesDevice(mistyped));

  struct stat shm {
  }, dev{};
  if (::stat("/dev/shm", &shm) != 0 || ::stat("/dev", &dev) != 0 || shm.st_dev == dev.st_dev) {
    GTEST_SKIP() << "/dev/shm is not a filesystem of its own here";
  }
  testing::TempDir inShm("/dev/shm");
  const std::string file = (inShm.path() / "cache").string();
  EXPECT_FALSE(cache::namesDevice(file));
  auto made = openFileDevice(FileDeviceOptions{.path = file, .size = kMiB});
  ASSERT_OK(made);
  EXPECT_EQ((*made)->size(), kMiB);
}

TEST_F(FileDeviceTest, ADirectoryIsNotADevice) {
  std::filesystem::create_directory(path("dir"));
  auto device = open("dir", kMiB);
  ASSERT_FALSE(device);
  EXPECT_NE(device.error().message().find(path("dir")), std::string::npos)
      << device.error().toString();
}

TEST_F(FileDeviceTest, RejectsMisalignedAndOutOfRangeArguments) {
  auto device = open("cache", 64 * kBlock);
  ASSERT_OK(device);
  expectBadArgumentsRejected(**device);
}

// Sets RLIMIT_FSIZE (and ignores SIGXFSZ, which would kill the process) for its lifetime, so that
// writes at or beyond the limit fail with EFBIG inside the kernel and a write that crosses it is
// cut short: a real error and a real short transfer from a regular file.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t limit) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    oldHandler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved_;
    lowered.rlim_cur = limit;
    ok_ = ::setrlimit(RLIMIT_FSIZE, &lowered) == 0;
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, oldHandler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  void (*oldHandler_)(int) = nullptr;
  bool ok_ = false;
};

TEST_F(FileDeviceTest, KernelWriteErrorAfterAShortWriteIsReported) {
  auto device = open("cache", 64 * kMiB);
  ASSERT_OK(device);
  Buffer data = randomBuffer(kMiB, 70);
  const std::uint64_t limit = 40 * kMiB;
  const std::uint64_t offset = limit - 256 * kKiB;  // the first 256 KiB fit under the limit
  Status s;
  {
    FileSizeLimit fsize(limit);
    ASSERT_TRUE(fsize.ok());
    s = (*device)->write(offset, data.get(), kMiB);
  }
  EXPECT_CODE(s, StatusCode::kIoError);
  // The rest of the short write was submitted again, at the limit, and that failed.
  EXPECT_NE(s.message().find(path("cache")), std::string::npos) << s.toString();
  EXPECT_NE(s.message().find(fmt::format("at {}", limit)), std::string::npos) << s.toString();
  EXPECT_NE(s.message().find(std::strerror(EFBIG)), std::string::npos) << s.toString();
  // What fitted was written.
  Buffer back = alignedBuffer(256 * kKiB);
  ASSERT_OK((*device)->read(offset, back.get(), 256 * kKiB));
  EXPECT_TRUE(sameBytes(back.get(), data.get(), 256 * kKiB));
  // And the device still works.
  ASSERT_OK((*device)->write(offset, data.get(), kMiB));
}

TEST_F(FileDeviceTest, FileTruncatedBehindItsBackGivesAClearReadError) {
  auto device = open("cache", 4 * kMiB);
  ASSERT_OK(device);
  Buffer data = randomBuffer(kMiB, 80);
  ASSERT_OK((*device)->write(2 * kMiB, data.get(), kMiB));
  ASSERT_OK((*device)->flush());
  const std::uint64_t end = 2 * kMiB + 512 * kKiB;
  ASSERT_EQ(::truncate(path("cache").c_str(), static_cast<off_t>(end)), 0);
  Buffer back = alignedBuffer(kMiB);
  const Status s = (*device)->read(2 * kMiB, back.get(), kMiB);
  EXPECT_CODE(s, StatusCode::kIoError);
  // The read stopped short at the new end of the file, went on from there and found nothing.
  EXPECT_NE(s.message().find(fmt::format("at {}", end)), std::string::npos) << s.toString();
  EXPECT_TRUE(sameBytes(back.get(), data.get(), 512 * kKiB));
}

// The test-only fault layer (TIERFS_TEST_CACHE_FAULTS): its words, and what each does to the
// calls that reach it, switched by rewriting the control file between calls.
TEST(FaultyDeviceTest, ParsesItsWordsAndNamesABadOne) {
  auto f = cache::parseDeviceFaults(" read/3\nwrite full flip/2 ");
  ASSERT_OK(f);
  EXPECT_EQ(f->readEvery, 3u);
  EXPECT_EQ(f->writeEvery, 1u);
  EXPECT_EQ(f->flipEvery, 2u);
  EXPECT_TRUE(f->full);
  auto none = cache::parseDeviceFaults("");
  ASSERT_OK(none);
  EXPECT_FALSE(none->any());
  for (const char* bad : {"reads", "read/0", "read/x", "write/", "eio"}) {
    auto r = cache::parseDeviceFaults(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message().find(fmt::format("'{}'", bad)), std::string::npos)
        << r.error().message();
  }
}

TEST(FaultyDeviceTest, FailsFlipsAndFillsAsItsControlFileSays) {
  TempDir dir;
  const std::string control = (dir.path() / "faults").string();
  auto* inner = new MemoryDevice(16 * kBlock);
  auto device = cache::makeFaultyDevice(std::unique_ptr<Device>(inner), control);
  const auto say = [&](const char* words) { std::ofstream(control) << words; };
  Buffer data = alignedBuffer(kBlock);
  fillRandom(data.get(), kBlock, 7);
  Buffer back = alignedBuffer(kBlock);

  ASSERT_OK(device->write(0, data.get(), kBlock));  // no control file: no faults
  ASSERT_OK(device->read(0, back.get(), kBlock));
  EXPECT_TRUE(sameBytes(data.get(), back.get(), kBlock));

  say("read/2");
  int failed = 0;
  for (int i = 0; i < 6; ++i) failed += !device->read(0, back.get(), kBlock).isOk();
  EXPECT_EQ(failed, 3);

  say("write");
  Status w = device->write(kBlock, data.get(), kBlock);
  EXPECT_EQ(w.code(), StatusCode::kIoError);
  EXPECT_NE(w.message().find("Input/output error"), std::string::npos) << w.message();
  EXPECT_FALSE(device->flush().isOk());
  ASSERT_OK(inner->read(kBlock, back.get(), kBlock));
  EXPECT_FALSE(sameBytes(data.get(), back.get(), kBlock)) << "a failed write reached the device";

  say("full");
  w = device->write(kBlock, data.get(), kBlock);
  EXPECT_NE(w.message().find("No space left on device"), std::string::npos) << w.message();

  say("flip");
  ASSERT_OK(device->read(0, back.get(), kBlock));
  int differ = 0;
  for (std::size_t i = 0; i < kBlock; ++i) differ += back[i] != data[i];
  EXPECT_EQ(differ, 1);

  say("bogus words");  // logged, no faults
  ASSERT_OK(device->write(kBlock, data.get(), kBlock));
  ASSERT_OK(device->read(kBlock, back.get(), kBlock));
  EXPECT_TRUE(sameBytes(data.get(), back.get(), kBlock));
}

}  // namespace
}  // namespace tierfs::testing
