#include "cache/Device.h"

#include <fmt/format.h>

namespace tierfs::cache {

Status Device::checkRange(std::string_view op, std::uint64_t offset, const void* buf,
                          std::size_t length) const {
  const auto bad = [&](std::string_view why) {
    return Status::invalidArgument(
        fmt::format("cache device {}: {} of {} bytes at {}: {}", name(), op, length, offset, why));
  };
  const std::uint32_t alignment = this->alignment();
  if (offset % alignment != 0) {
    return bad(fmt::format("offset is not a multiple of the alignment {}", alignment));
  }
  if (length % alignment != 0) {
    return bad(fmt::format("length is not a multiple of the alignment {}", alignment));
  }
  if (reinterpret_cast<std::uintptr_t>(buf) % alignment != 0) {
    return bad(
        fmt::format("buffer address {} is not a multiple of the alignment {}", buf, alignment));
  }
  const std::uint64_t size = this->size();
  if (offset > size || length > size - offset) {
    return bad(fmt::format("the range ends beyond the device size {}", size));
  }
  return Status::ok();
}

}  // namespace tierfs::cache
