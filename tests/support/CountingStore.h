#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "backends/ObjectStore.h"

namespace tierfs::testing {

// What was sent to a store since the last reset(): to check what an operation costs.
struct StoreCounts {
  std::uint64_t reads = 0;               // read() calls
  std::uint64_t mutations = 0;           // mutate() calls (every write goes through it)
  std::uint64_t dataWrites = 0;          // mutations that write an object's data (writeFull)
  std::uint64_t dataBytes = 0;           // bytes of object data written
  std::uint64_t metaBytes = 0;           // bytes of omap keys and values and xattrs written
  std::uint64_t removes = 0;             // mutations that remove an object
  std::uint64_t stats = 0;               // stat() calls
  std::uint64_t omapLists = 0;           // omapList() calls (pages of directory listings)
  std::uint64_t omapGets = 0;            // omapGet() calls (single dentries)
  std::uint64_t xattrReads = 0;          // getXattr() calls
  std::vector<std::string> dataObjects;  // the objects whose data was written, in call order
  std::vector<std::string> readObjects;  // the objects read, in call order
};

// Decorates any store and counts the calls and bytes sent to it; forwards everything unchanged.
// Thread-safe.
class CountingStore final : public backends::ObjectStore {
 public:
  explicit CountingStore(backends::ObjectStore& inner)
      : ObjectStore(inner.defaultTimeout()), inner_(inner) {}

  std::string describe() const override { return "counting " + inner_.describe(); }

  StoreCounts counts() const {
    std::lock_guard lock(mu_);
    return counts_;
  }
  void reset() {
    std::lock_guard lock(mu_);
    counts_ = {};
  }

 protected:
  void readImpl(const std::string& oid, std::uint64_t offset, std::uint64_t length,
                backends::Callback<Bytes> done, Deadline deadline) override {
    {
      std::lock_guard lock(mu_);
      ++counts_.reads;
      counts_.readObjects.push_back(oid);
    }
    inner_.read(oid, offset, length, std::move(done), deadline);
  }
  void statImpl(const std::string& oid, backends::Callback<backends::ObjectStat> done,
                Deadline deadline) override {
    {
      std::lock_guard lock(mu_);
      ++counts_.stats;
    }
    inner_.stat(oid, std::move(done), deadline);
  }
  void getXattrImpl(const std::string& oid, const std::string& name,
                    backends::Callback<std::string> done, Deadline deadline) override {
    {
      std::lock_guard lock(mu_);
      ++counts_.xattrReads;
    }
    inner_.getXattr(oid, name, std::move(done), deadline);
  }
  void omapGetImpl(const std::string& oid, std::vector<std::string> keys,
                   backends::Callback<std::map<std::string, std::string>> done,
                   Deadline deadline) override {
    {
      std::lock_guard lock(mu_);
      ++counts_.omapGets;
    }
    inner_.omapGet(oid, std::move(keys), std::move(done), deadline);
  }
  void omapListImpl(const std::string& oid, backends::OmapListArgs args,
                    backends::Callback<backends::OmapPage> done, Deadline deadline) override {
    {
      std::lock_guard lock(mu_);
      ++counts_.omapLists;
    }
    inner_.omapList(oid, std::move(args), std::move(done), deadline);
  }
  void listObjectsImpl(const std::string& cursor, std::uint32_t maxEntries,
                       backends::Callback<backends::ObjectPage> done, Deadline deadline) override {
    inner_.listObjects(cursor, maxEntries, std::move(done), deadline);
  }
  void usageImpl(backends::Callback<backends::StoreUsage> done, Deadline deadline) override {
    inner_.usage(std::move(done), deadline);
  }
  void mutateImpl(const std::string& oid, backends::WriteOp op,
                  backends::Callback<std::uint64_t> done, Deadline deadline) override {
    {
      std::lock_guard lock(mu_);
      ++counts_.mutations;
      for (const auto& m : op.mutations()) {
        if (const auto* w = std::get_if<backends::WriteOp::WriteFull>(&m)) {
          ++counts_.dataWrites;
          counts_.dataBytes += w->data.size();
          counts_.dataObjects.push_back(oid);
        } else if (const auto* x = std::get_if<backends::WriteOp::SetXattr>(&m)) {
          counts_.metaBytes += x->name.size() + x->value.size();
        } else if (const auto* s = std::get_if<backends::WriteOp::OmapSet>(&m)) {
          counts_.metaBytes += s->key.size() + s->value.size();
        } else if (std::holds_alternative<backends::WriteOp::Remove>(m)) {
          ++counts_.removes;
        }
      }
    }
    inner_.mutate(oid, std::move(op), std::move(done), deadline);
  }

 private:
  backends::ObjectStore& inner_;
  mutable std::mutex mu_;  // guards counts_
  StoreCounts counts_;
};

}  // namespace tierfs::testing
