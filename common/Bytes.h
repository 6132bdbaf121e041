#pragma once

#include <algorithm>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace tierfs {

// An immutable byte string that shares whatever holds its bytes: a std::string it took over, or
// a library's buffer (a librados bufferlist) that it keeps alive. Lets a back end hand over the
// bytes it received without copying them. Copies are cheap (they share); thread-safe to share.
class Bytes {
 public:
  Bytes() = default;
  Bytes(std::string s)  // NOLINT(google-explicit-constructor): a string is bytes
      : owner_(std::make_shared<const std::string>(std::move(s))),
        view_(*static_cast<const std::string*>(owner_.get())) {}
  Bytes(const char* s) : Bytes(std::string(s)) {}  // NOLINT(google-explicit-constructor)

  // `view` must stay valid for as long as `owner` lives.
  static Bytes shared(std::shared_ptr<const void> owner, std::string_view view) {
    Bytes b;
    b.owner_ = std::move(owner);
    b.view_ = view;
    return b;
  }

  // `length` bytes from `offset` (cut at the end), sharing the same owner: no copy.
  Bytes slice(std::size_t offset, std::size_t length) const {
    Bytes b;
    b.owner_ = owner_;
    b.view_ = view_.substr(std::min(offset, view_.size()), length);
    return b;
  }

  const char* data() const { return view_.data(); }
  std::size_t size() const { return view_.size(); }
  bool empty() const { return view_.empty(); }
  std::string_view view() const { return view_; }
  operator std::string_view() const { return view_; }  // NOLINT(google-explicit-constructor)
  std::string toString() const { return std::string(view_); }

  friend bool operator==(const Bytes& a, std::string_view b) { return a.view_ == b; }
  friend std::ostream& operator<<(std::ostream& os, const Bytes& b) {
    return os << "Bytes(" << b.size() << ")";
  }

 private:
  std::shared_ptr<const void> owner_;
  std::string_view view_;
};

}  // namespace tierfs
