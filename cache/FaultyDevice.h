#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cache/Device.h"
#include "common/Result.h"

// Faults injected into a cache device of a real daemon, for tests only: the device under
// RegionCache (the io_uring file device) is wrapped, and the faults are read from a control
// file before every I/O, so that a shell test switches them on and off while the mount runs.
// The daemon wraps its devices when the environment variable TIERFS_TEST_CACHE_FAULTS names
// such a file (docs/CACHE.md); it logs a warning when it does.
namespace tierfs::cache {

// What the control file says, in words separated by blanks (no file or no words: no faults):
//   read     every read fails with EIO         read/N   every Nth read fails
//   write    every write and flush fails (EIO) write/N  every Nth write fails
//   full     every write fails with ENOSPC (a device that has run out of room)
//   flip     every read returns one byte flipped (a media error the device does not report);
//            flip/N: every Nth read
struct DeviceFaults {
  std::uint32_t readEvery = 0;  // 0: none; 1: every read; N: every Nth
  std::uint32_t writeEvery = 0;
  std::uint32_t flipEvery = 0;
  bool full = false;

  bool any() const { return readEvery || writeEvery || flipEvery || full; }
};

// InvalidArgument naming the word that is not one of the above.
Result<DeviceFaults> parseDeviceFaults(std::string_view text);

// Wraps `inner`: each read and write first reads `controlFile` (a missing file: no faults; an
// unreadable or bad one: logged once per change, no faults). Failed calls do not reach the
// inner device. Thread-safe as the inner device is.
std::unique_ptr<Device> makeFaultyDevice(std::unique_ptr<Device> inner, std::string controlFile);

}  // namespace tierfs::cache
