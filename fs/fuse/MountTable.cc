#include "fs/fuse/MountTable.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace tierfs::fs {
namespace {

// mountinfo writes space, tab, newline and backslash in paths as a backslash and three octal
// digits.
std::string decodeOctalEscapes(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (std::size_t i = 0; i < field.size(); ++i) {
    const bool escape = field[i] == '\\' && i + 3 < field.size();
    if (escape && field.substr(i + 1, 3).find_first_not_of("01234567") == std::string_view::npos) {
      out.push_back(static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                                      (field[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

std::vector<std::string> splitFields(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> fields;
  for (std::string f; in >> f;) fields.push_back(std::move(f));
  return fields;
}

// ID PARENT MAJOR:MINOR ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS
std::optional<MountEntry> parseLine(const std::string& line) {
  const std::vector<std::string> f = splitFields(line);
  std::size_t dash = 6;
  while (dash < f.size() && f[dash] != "-") ++dash;
  if (f.size() < 6 || dash + 2 >= f.size()) return std::nullopt;
  MountEntry e;
  if (std::sscanf(f[2].c_str(), "%u:%u", &e.major, &e.minor) != 2) return std::nullopt;
  e.mountPoint = decodeOctalEscapes(f[4]);
  e.fsType = f[dash + 1];
  e.source = decodeOctalEscapes(f[dash + 2]);
  return e;
}

}  // namespace

bool MountEntry::isFuse() const {
  return fsType == "fuse" || fsType == "fuseblk" || fsType.starts_with("fuse.");
}

std::vector<MountEntry> parseMountInfo(std::string_view text) {
  std::vector<MountEntry> mounts;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (auto e = parseLine(line)) mounts.push_back(std::move(*e));
  }
  return mounts;
}

std::optional<MountEntry> findMountAt(const std::vector<MountEntry>& mounts,
                                      const std::string& mountPoint) {
  for (auto it = mounts.rbegin(); it != mounts.rend(); ++it) {
    if (it->mountPoint == mountPoint) return *it;
  }
  return std::nullopt;
}

Result<std::vector<MountEntry>> readMountInfo() {
  std::ifstream in("/proc/self/mountinfo");
  if (!in.is_open()) return failure(Status::ioError("could not open /proc/self/mountinfo"));
  std::stringstream text;
  text << in.rdbuf();
  return parseMountInfo(text.str());
}

}  // namespace tierfs::fs
