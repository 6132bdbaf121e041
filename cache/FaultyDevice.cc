#include "cache/FaultyDevice.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

namespace tierfs::cache {
namespace {

// `word` is NAME or NAME/N; sets `every` (1 for NAME alone).
bool parseEvery(std::string_view word, std::string_view name, std::uint32_t& every) {
  if (word == name) {
    every = 1;
    return true;
  }
  if (!word.starts_with(name) || word.size() <= name.size() + 1 || word[name.size()] != '/') {
    return false;
  }
  const std::string_view n = word.substr(name.size() + 1);
  auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), every);
  return ec == std::errc() && end == n.data() + n.size() && every > 0;
}

class FaultyDevice : public Device {
 public:
  FaultyDevice(std::unique_ptr<Device> inner, std::string controlFile)
      : inner_(std::move(inner)), controlFile_(std::move(controlFile)) {}

  std::uint64_t size() const override { return inner_->size(); }
  std::uint32_t alignment() const override { return inner_->alignment(); }
  const std::string& name() const override { return inner_->name(); }

  Status write(std::uint64_t offset, const void* buf, std::size_t length) override {
    const DeviceFaults f = current();
    if (f.full) return injected("write", offset, ENOSPC);
    if (hits(f.writeEvery, writes_)) return injected("write", offset, EIO);
    return inner_->write(offset, buf, length);
  }

  Status read(std::uint64_t offset, void* buf, std::size_t length) override {
    const DeviceFaults f = current();
    if (hits(f.readEvery, reads_)) return injected("read", offset, EIO);
    Status s = inner_->read(offset, buf, length);
    if (s.isOk() && length > 0 && hits(f.flipEvery, flips_)) {
      // The middle byte: inside an entry's payload or header, wherever the read starts.
      static_cast<unsigned char*>(buf)[length / 2] ^= 0x5a;
    }
    return s;
  }

  Status flush() override {
    const DeviceFaults f = current();
    if (f.full || hits(f.writeEvery, writes_)) return injected("flush", 0, f.full ? ENOSPC : EIO);
    return inner_->flush();
  }

 private:
  static bool hits(std::uint32_t every, std::atomic<std::uint64_t>& counter) {
    return every > 0 && (counter.fetch_add(1, std::memory_order_relaxed) + 1) % every == 0;
  }

  Status injected(std::string_view op, std::uint64_t offset, int err) const {
    return Status::ioError(fmt::format("cache device {}: {} at {}: {} (injected by {})", name(), op,
                                       offset, std::strerror(err), controlFile_));
  }

  // The control file's faults now; a bad file is logged when its text changes.
  DeviceFaults current() {
    std::ifstream in(controlFile_);
    if (!in) return {};
    std::stringstream text;
    text << in.rdbuf();
    auto faults = parseDeviceFaults(text.str());
    std::lock_guard lock(mu_);
    if (text.str() != lastText_) {
      lastText_ = text.str();
      if (!faults) {
        spdlog::error("cache: fault file {}: {}; no faults injected", controlFile_,
                      faults.error().message());
      } else {
        spdlog::warn("cache: fault file {} says: {}", controlFile_,
                     faults->any() ? text.str() : "no faults");
      }
    }
    return faults ? *faults : DeviceFaults{};
  }

  std::unique_ptr<Device> inner_;
  const std::string controlFile_;
  std::atomic<std::uint64_t> reads_{0}, writes_{0}, flips_{0};
  std::mutex mu_;
  std::string lastText_;  // guarded by mu_
};

}  // namespace

Result<DeviceFaults> parseDeviceFaults(std::string_view text) {
  DeviceFaults f;
  std::istringstream words{std::string(text)};
  for (std::string w; words >> w;) {
    if (w == "full") {
      f.full = true;
    } else if (!parseEvery(w, "read", f.readEvery) && !parseEvery(w, "write", f.writeEvery) &&
               !parseEvery(w, "flip", f.flipEvery)) {
      return failure(Status::invalidArgument(fmt::format(
          "unknown fault '{}': expected read, read/N, write, write/N, full, flip or flip/N", w)));
    }
  }
  return f;
}

std::unique_ptr<Device> makeFaultyDevice(std::unique_ptr<Device> inner, std::string controlFile) {
  return std::make_unique<FaultyDevice>(std::move(inner), std::move(controlFile));
}

}  // namespace tierfs::cache
