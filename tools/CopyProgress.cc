#include "tools/CopyProgress.h"

#include <fmt/format.h>

#include <cstdio>

#include "common/Units.h"

namespace tierfs::tools::copy {
namespace {

constexpr const char* kClearLine = "\r\033[K";

}  // namespace

std::string formatEta(double seconds) {
  const auto s = static_cast<std::uint64_t>(seconds + 0.5);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, s / 60 % 60);
}

void Progress::startCopy() {
  std::lock_guard lock(mu_);
  copyStart_ = Clock::now();
  copying_ = true;
}

std::string Progress::lineLocked() const {
  const std::uint64_t files = filesDone_, totalFiles = totalFiles_;
  const std::uint64_t bytes = bytesDone_, totalBytes = totalBytes_;
  if (!copying_) {
    return fmt::format("{}: scanning: {} files, {} so far", verb_, totalFiles,
                       formatSize(totalBytes));
  }
  const double secs = std::chrono::duration<double>(Clock::now() - copyStart_).count();
  const double byteRate = secs > 0 ? bytes / secs : 0, fileRate = secs > 0 ? files / secs : 0;
  // Small files take their time per file, large ones per byte: the slower estimate wins.
  double eta = 0;
  if (fileRate > 0) eta = (totalFiles - std::min(files, totalFiles)) / fileRate;
  if (byteRate > 0) eta = std::max(eta, (totalBytes - std::min(bytes, totalBytes)) / byteRate);
  return fmt::format("{}: {}/{} files, {} of {}, {:.1f} MiB/s, {:.0f} files/s, ETA {}", verb_,
                     files, totalFiles, formatSize(bytes), formatSize(totalBytes),
                     byteRate / (1 << 20), fileRate, files ? formatEta(eta) : "?");
}

std::string Progress::line() {
  std::lock_guard lock(mu_);
  return lineLocked();
}

void Progress::draw() {
  if (!show_) return;
  std::lock_guard lock(mu_);
  std::fprintf(stderr, "%s%s", kClearLine, lineLocked().c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::message(const std::string& text) {
  std::lock_guard lock(mu_);
  if (drawn_) std::fputs(kClearLine, stderr);
  std::fprintf(stderr, "%s\n", text.c_str());
  if (drawn_) std::fputs(lineLocked().c_str(), stderr);
  std::fflush(stderr);
}

void Progress::clear() {
  std::lock_guard lock(mu_);
  if (drawn_) std::fputs(kClearLine, stderr);
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace tierfs::tools::copy
