#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/Result.h"

namespace tierfs {

// Appends the fields of an on-disk or on-RADOS record: unsigned LEB128 varints (small numbers
// take one byte), zigzag varints for signed values, and length-prefixed strings.
class Encoder {
 public:
  void putU8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void putVarint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void putSigned(std::int64_t v) {
    putVarint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }
  void putString(std::string_view s) {
    putVarint(s.size());
    out_.append(s);
  }
  void putRaw(std::string_view s) { out_.append(s); }
  void putFixed32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }
  void putFixed64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what an Encoder wrote. Every read checks the bounds of the input; a failure is Corruption
// naming the record (`what`) and the field, and leaves the decoder unusable. Only the Encoder's
// own spelling of a value is accepted (no redundant varint bytes), so a decoded record encodes
// back to exactly its input.
class Decoder {
 public:
  Decoder(std::string_view in, std::string_view what) : in_(in), what_(what) {}
  // A temporary std::string would be gone before the decoder reads it.
  template <typename S, typename = std::enable_if_t<std::is_same_v<S, std::string>>>
  Decoder(S&& in, std::string_view what) = delete;

  Result<std::uint8_t> u8(std::string_view field) {
    if (in_.empty()) return truncated(field);
    auto v = static_cast<std::uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return v;
  }
  Result<std::uint64_t> varint(std::string_view field) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (in_.empty()) return truncated(field);
      auto byte = static_cast<std::uint8_t>(in_[0]);
      in_.remove_prefix(1);
      if (shift == 63 && byte > 1) break;  // more than 64 bits
      // A last byte of 0 adds nothing: "80 00" would be a second spelling of 0.
      if (byte == 0 && shift > 0) return bad(field, "varint with a redundant zero byte");
      v |= std::uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return v;
    }
    return bad(field, "varint longer than 64 bits");
  }
  // A varint that must fit in 32 bits.
  Result<std::uint32_t> varint32(std::string_view field) {
    TIERFS_ASSIGN_OR_RETURN(std::uint64_t v, varint(field));
    if (v > UINT32_MAX) return bad(field, "value over 32 bits");
    return static_cast<std::uint32_t>(v);
  }
  Result<std::int64_t> signedVarint(std::string_view field) {
    TIERFS_ASSIGN_OR_RETURN(std::uint64_t v, varint(field));
    return static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  // A length-prefixed string of at most maxLength bytes; the view points into the input.
  Result<std::string_view> string(std::string_view field, std::size_t maxLength) {
    TIERFS_ASSIGN_OR_RETURN(std::uint64_t n, varint(field));
    if (n > maxLength) return bad(field, "longer than allowed");
    return raw(field, static_cast<std::size_t>(n));
  }
  Result<std::string_view> raw(std::string_view field, std::size_t n) {
    if (in_.size() < n) return truncated(field);
    std::string_view v = in_.substr(0, n);
    in_.remove_prefix(n);
    return v;
  }
  Result<std::uint32_t> fixed32(std::string_view field) {
    TIERFS_ASSIGN_OR_RETURN(std::string_view b, raw(field, 4));
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t{static_cast<std::uint8_t>(b[i])} << (8 * i);
    return v;
  }
  Result<std::uint64_t> fixed64(std::string_view field) {
    TIERFS_ASSIGN_OR_RETURN(std::string_view b, raw(field, 8));
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<std::uint8_t>(b[i])} << (8 * i);
    return v;
  }

  std::size_t remaining() const { return in_.size(); }
  Status expectEnd() const {
    if (in_.empty()) return Status::ok();
    return Status::corruption(std::string(what_) + ": " + std::to_string(in_.size()) +
                              " unexpected bytes after the last field");
  }
  Status error(std::string_view field, std::string_view problem) const {
    return Status::corruption(std::string(what_) + ": field '" + std::string(field) +
                              "': " + std::string(problem));
  }

 private:
  ErrorReturn truncated(std::string_view field) { return bad(field, "truncated"); }
  ErrorReturn bad(std::string_view field, std::string_view problem) {
    in_ = {};
    return ErrorReturn{error(field, problem)};
  }

  std::string_view in_;
  std::string_view what_;
};

}  // namespace tierfs
