// DirStore's write path: guards, then one RocksDB batch under the object's stripe lock.
#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>

#include "backends/DirStore.h"
#include "backends/DirStoreKeys.h"

namespace tierfs::backends {
namespace {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
// C++20 deduces this for an aggregate by itself; clang before 17 (the fuzz build) needs the guide.
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

}  // namespace

Status DirStore::checkGuards(const std::string& oid, const WriteOp& op, bool exists) {
  for (const auto& guard : op.guards()) {
    Status s =
        std::visit(Overloaded{
                       [&](const WriteOp::AssertExists&) {
                         return exists ? Status::ok() : Status::notFound("no such object");
                       },
                       [&](const WriteOp::CreateExclusive&) {
                         return exists ? Status::alreadyExists("object exists") : Status::ok();
                       },
                       [&](const WriteOp::XattrEquals& g) {
                         return compareStored(dirkeys::xattrKey(oid, g.name), g.value, exists,
                                              "xattr '" + g.name + "'");
                       },
                       [&](const WriteOp::OmapEquals& g) {
                         return compareStored(dirkeys::omapKey(oid, g.key), g.value, exists,
                                              "omap key '" + g.key + "'");
                       },
                   },
                   guard);
    if (!s.isOk()) return s;
  }
  return Status::ok();
}

Status DirStore::compareStored(const std::string& key, const std::string& expected, bool exists,
                               const std::string& what) {
  if (!exists) return Status::notFound("no such object");
  std::string stored;  // absent compares equal to "", as in RADOS
  auto s = db_->Get(rocksdb::ReadOptions(), key, &stored);
  if (!s.ok() && !s.IsNotFound()) return dirkeys::fromRocks(s, "reading " + what);
  if (stored != expected)
    return Status::preconditionFailed(what + " differs from the expected value");
  return Status::ok();
}

Result<std::uint64_t> DirStore::mutateSync(const std::string& oid, const WriteOp& op) {
  if (op.empty()) return failure(Status::invalidArgument("empty write operation"));
  // Write new data files before taking the lock: large writes must not hold up the stripe.
  std::vector<std::uint64_t> newDataIds;
  for (const auto& m : op.mutations()) {
    if (const auto* w = std::get_if<WriteOp::WriteFull>(&m)) {
      auto id = writeDataFile(oid, w->data);
      if (!id) {
        for (auto stale : newDataIds) unlinkDataFile(oid, stale);
        return failure(id.error());
      }
      newDataIds.push_back(*id);
    }
  }
  std::vector<std::uint64_t> toUnlink;
  auto result = commitLocked(oid, op, newDataIds, toUnlink);
  for (auto id : toUnlink) unlinkDataFile(oid, id);
  return result;
}

Result<std::uint64_t> DirStore::commitLocked(const std::string& oid, const WriteOp& op,
                                             const std::vector<std::uint64_t>& newDataIds,
                                             std::vector<std::uint64_t>& toUnlink) {
  std::shared_lock gate(commitGate_);
  std::lock_guard lock(stripeFor(oid));
  auto loaded = loadRecord(oid);
  if (!loaded && !loaded.error().isNotFound()) {
    toUnlink = newDataIds;
    return failure(loaded.error());
  }
  dirkeys::ObjectRecord rec = loaded ? *loaded : dirkeys::ObjectRecord{};
  const bool existed = loaded.has_value();
  if (Status s = checkGuards(oid, op, existed); !s.isOk()) {
    toUnlink = newDataIds;
    return failure(s);
  }
  const bool creates = !existed && std::any_of(op.guards().begin(), op.guards().end(), [](auto& g) {
    return std::holds_alternative<WriteOp::CreateExclusive>(g);
  });
  if (op.mutations().empty() && !creates) return rec.version;  // guards only: nothing changes

  rocksdb::WriteBatch batch;
  bool exists = existed || creates;
  auto newData = newDataIds.begin();
  std::vector<std::uint64_t> superseded;
  for (const auto& m : op.mutations()) {
    Status s =
        std::visit(Overloaded{
                       [&](const WriteOp::WriteFull& w) {
                         if (rec.dataId != 0) superseded.push_back(rec.dataId);
                         rec.dataId = *newData++;
                         rec.size = w.data.size();
                         exists = true;
                         return Status::ok();
                       },
                       [&](const WriteOp::SetXattr& x) {
                         exists = true;
                         return dirkeys::fromRocks(
                             batch.Put(dirkeys::xattrKey(oid, x.name), x.value), "batching xattr");
                       },
                       [&](const WriteOp::OmapSet& o) {
                         exists = true;
                         return dirkeys::fromRocks(batch.Put(dirkeys::omapKey(oid, o.key), o.value),
                                                   "batching omap");
                       },
                       [&](const WriteOp::OmapRemove& o) {
                         if (!exists) return Status::notFound("no such object");
                         return dirkeys::fromRocks(batch.Delete(dirkeys::omapKey(oid, o.key)),
                                                   "batching omap");
                       },
                       [&](const WriteOp::Remove&) {
                         if (!exists) return Status::notFound("no such object");
                         for (char tag : {'x', 'm'}) {
                           auto begin = dirkeys::ownedPrefix(tag, oid);
                           auto end = dirkeys::prefixEnd(begin);
                           auto rs = batch.DeleteRange(begin, end);
                           if (!rs.ok()) return dirkeys::fromRocks(rs, "batching remove");
                         }
                         if (rec.dataId != 0) superseded.push_back(rec.dataId);
                         rec.dataId = 0;
                         rec.size = 0;
                         exists = false;
                         return Status::ok();
                       },
                   },
                   m);
    if (!s.isOk()) {
      toUnlink = newDataIds;
      return failure(s);
    }
  }
  rec.version = std::max(rec.version + 1, nextVersion_++);
  rec.mtimeSec = dirkeys::nowSeconds();
  auto s = exists ? batch.Put(dirkeys::recordKey(oid), rec.encode())
                  : batch.Delete(dirkeys::recordKey(oid));
  rocksdb::WriteOptions wo;
  wo.sync = options_.durable;
  if (s.ok()) s = db_->Write(wo, &batch);
  if (!s.ok()) {
    toUnlink = newDataIds;
    return failure(dirkeys::fromRocks(s, "committing write"));
  }
  objectsDelta_ += static_cast<int>(exists) - static_cast<int>(existed);  // under the gate
  toUnlink = std::move(superseded);
  return rec.version;
}

}  // namespace tierfs::backends
