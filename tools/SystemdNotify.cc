#include "tools/SystemdNotify.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace tierfs::tools::notify {
namespace {

void send(const std::string& message) {
  // 0: keep NOTIFY_SOCKET in the environment, since later messages (STOPPING=1) use it too.
  const int r = sd_notify(0, message.c_str());
  if (r < 0) spdlog::warn("sd_notify '{}': {}", message, std::strerror(-r));
}

}  // namespace

void status(std::string_view text) { send(fmt::format("STATUS={}", text)); }

void ready(std::string_view text, bool forked) {
  std::string message = fmt::format("READY=1\nSTATUS={}", text);
  if (forked) message += fmt::format("\nMAINPID={}", getpid());
  send(message);
}

void stopping(std::string_view text) { send(fmt::format("STOPPING=1\nSTATUS={}", text)); }

}  // namespace tierfs::tools::notify
