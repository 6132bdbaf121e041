#pragma once

#include <string>
#include <variant>
#include <vector>

#include "common/Bytes.h"

namespace tierfs::backends {

// A compound mutation of one object, applied atomically: every guard is checked first, in the
// order added; if any fails, nothing is applied. Then the mutations run in order. A mutation of
// an absent object creates it (as RADOS does).
//
// Guard semantics (the same on every back end):
//   assertExists      absent object -> NotFound
//   createExclusive   present object -> AlreadyExists; otherwise the object is created
//   xattrEquals       absent object -> NotFound; value differs -> PreconditionFailed
//   omapEquals        absent object -> NotFound; value differs -> PreconditionFailed
// An absent xattr or omap key compares equal to "" (RADOS semantics), so encoded values that
// guards compare must never be empty.
class WriteOp {
 public:
  struct AssertExists {};
  struct CreateExclusive {};
  struct XattrEquals {
    std::string name, value;
  };
  struct OmapEquals {
    std::string key, value;
  };
  using Guard = std::variant<AssertExists, CreateExclusive, XattrEquals, OmapEquals>;

  struct WriteFull {
    Bytes data;  // shared, not copied: callers may hand the same bytes to many writes
  };
  struct SetXattr {
    std::string name, value;
  };
  struct OmapSet {
    std::string key, value;
  };
  struct OmapRemove {
    std::string key;
  };
  struct Remove {};
  using Mutation = std::variant<WriteFull, SetXattr, OmapSet, OmapRemove, Remove>;

  WriteOp& assertExists() { return guard(AssertExists{}); }
  WriteOp& createExclusive() { return guard(CreateExclusive{}); }
  WriteOp& xattrEquals(std::string name, std::string value) {
    return guard(XattrEquals{std::move(name), std::move(value)});
  }
  WriteOp& omapEquals(std::string key, std::string value) {
    return guard(OmapEquals{std::move(key), std::move(value)});
  }

  WriteOp& writeFull(Bytes data) { return mutate(WriteFull{std::move(data)}); }
  WriteOp& setXattr(std::string name, std::string value) {
    return mutate(SetXattr{std::move(name), std::move(value)});
  }
  WriteOp& omapSet(std::string key, std::string value) {
    return mutate(OmapSet{std::move(key), std::move(value)});
  }
  WriteOp& omapRemove(std::string key) { return mutate(OmapRemove{std::move(key)}); }
  WriteOp& remove() { return mutate(Remove{}); }

  const std::vector<Guard>& guards() const { return guards_; }
  const std::vector<Mutation>& mutations() const { return mutations_; }
  bool empty() const { return guards_.empty() && mutations_.empty(); }

 private:
  WriteOp& guard(Guard g) {
    guards_.push_back(std::move(g));
    return *this;
  }
  WriteOp& mutate(Mutation m) {
    mutations_.push_back(std::move(m));
    return *this;
  }

  std::vector<Guard> guards_;
  std::vector<Mutation> mutations_;
};

}  // namespace tierfs::backends
