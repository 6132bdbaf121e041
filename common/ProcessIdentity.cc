#include "common/ProcessIdentity.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

namespace tierfs {
namespace {

std::string firstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string linkTarget(const char* path) {
  char buf[256];
  ssize_t n = ::readlink(path, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// The state and start time (fields 3 and 22 of /proc/PID/stat), read after the command name,
// which is in parentheses and may hold spaces and parentheses of its own.
struct StatFields {
  char state = '?';
  std::string start;
};
std::optional<StatFields> readStat(const std::string& pid) {
  std::string line = firstLine(fmt::format("/proc/{}/stat", pid));
  auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  StatFields f;
  std::string field;
  rest >> f.state;
  for (int i = 4; i <= 22 && rest >> field; ++i) {
    if (i == 22) f.start = field;
  }
  if (f.start.empty()) return std::nullopt;
  return f;
}

std::string identityNow() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  auto self = readStat(std::to_string(::getpid()));
  return fmt::format("host={} boot={} pidns={} pid={} start={}", host[0] ? host : "?",
                     firstLine("/proc/sys/kernel/random/boot_id"), linkTarget("/proc/self/ns/pid"),
                     ::getpid(), self ? self->start : "?");
}

// "k=v k=v ..." -> {k: v}; tokens without '=' are ignored.
std::map<std::string, std::string, std::less<>> fields(std::string_view identity) {
  std::map<std::string, std::string, std::less<>> out;
  std::istringstream in{std::string(identity)};
  std::string token;
  while (in >> token) {
    auto eq = token.find('=');
    if (eq != std::string::npos) out.emplace(token.substr(0, eq), token.substr(eq + 1));
  }
  return out;
}

bool isNumber(std::string_view s) {
  unsigned long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

}  // namespace

const std::string& processIdentity() {
  // A forked child is another process: it computes its own.
  static thread_local pid_t cachedFor = 0;
  static thread_local std::string cached;
  if (cachedFor != ::getpid()) {
    cached = identityNow();
    cachedFor = ::getpid();
  }
  return cached;
}

Liveness processLiveness(std::string_view identity) {
  auto theirs = fields(identity);
  auto ours = fields(processIdentity());
  for (const char* key : {"boot", "pidns"}) {
    auto t = theirs.find(key);
    if (t == theirs.end() || t->second.empty() || t->second != ours[key]) return Liveness::kUnknown;
  }
  auto pid = theirs.find("pid");
  auto start = theirs.find("start");
  if (pid == theirs.end() || start == theirs.end() || !isNumber(pid->second) ||
      !isNumber(start->second)) {
    return Liveness::kUnknown;
  }
  auto stat = readStat(pid->second);
  // A zombie has exited: it only waits for its parent to collect its status.
  if (!stat || stat->start != start->second || stat->state == 'Z' || stat->state == 'X') {
    return Liveness::kGone;
  }
  return Liveness::kAlive;
}

}  // namespace tierfs
