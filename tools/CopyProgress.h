#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "common/Deadline.h"

namespace tierfs::tools::copy {

// The progress line of a copy on standard error (files and bytes done of the total, MiB/s,
// files/s, the time left), redrawn by draw() when `show`; messages go on lines of their own
// above it. Thread-safe.
class Progress {
 public:
  Progress(std::string verb, bool show) : verb_(std::move(verb)), show_(show) {}

  void startCopy();
  void addTotals(std::uint64_t files, std::uint64_t bytes) {
    totalFiles_ += files;
    totalBytes_ += bytes;
  }
  void fileDone() { ++filesDone_; }
  void addBytes(std::uint64_t n) { bytesDone_ += n; }

  void draw();
  std::string line();  // what draw() shows, for a log line when standard error is no terminal
  void message(const std::string& text);
  void clear();

 private:
  std::string lineLocked() const;

  const std::string verb_;
  const bool show_;
  std::atomic<std::uint64_t> totalFiles_{0}, totalBytes_{0}, filesDone_{0}, bytesDone_{0};
  std::atomic<bool> copying_{false};
  Clock::time_point copyStart_;
  std::mutex mu_;  // guards standard error and the fields below
  bool drawn_ = false;
};

// "12s", "3m05s", "2h07m".
std::string formatEta(double seconds);

}  // namespace tierfs::tools::copy
