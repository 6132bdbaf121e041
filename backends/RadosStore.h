#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

#include "backends/ObjectStore.h"
#include "common/ThreadPool.h"

namespace tierfs::backends {

struct RadosOptions {
  std::string conf;                   // ceph.conf path; "" = librados' default search
  std::string keyring;                // "" = as the conf says
  std::string user = "client.admin";  // cephx entity, "client.NAME"
  std::string pool;
  std::string nspace;                           // RADOS namespace within the pool; "" = default
  Duration timeout = std::chrono::seconds(30);  // default deadline and librados op timeouts
  unsigned maxInFlight = 64;      // requests outstanding at the OSDs; more wait in a queue
  bool allowOpenKeyring = false;  // connect even with a keyring others may read (Keyring.h)
};

struct RadosConnection;  // librados handles, kept out of this header

// The Ceph back end: librados with asynchronous completions. Connects with cephx from a conf
// file, keyring and user; every librados timeout is set from `timeout` before connecting, so a
// dead monitor or OSD makes calls fail instead of hanging. At most `maxInFlight` requests are
// outstanding; further calls queue in order without blocking the caller.
// usage(): bytes are the whole cluster's (rados_cluster_stat), objects the whole pool's, every
// namespace included; both come from the statistics that ceph-mgr gathers every few seconds, so
// they lag behind writes, and a cluster without a mgr has none (Unavailable).
// Thread-safe. The destructor waits for the outstanding requests (bounded by the op timeout).
class RadosStore final : public ObjectStore {
 public:
  // Unavailable when the cluster can't be reached; NotFound when the pool doesn't exist.
  static Result<std::unique_ptr<RadosStore>> connect(const RadosOptions& options);
  ~RadosStore() override;

  std::string describe() const override;

 protected:
  void readImpl(const std::string& oid, std::uint64_t offset, std::uint64_t length,
                Callback<Bytes> done, Deadline deadline) override;
  void statImpl(const std::string& oid, Callback<ObjectStat> done, Deadline deadline) override;
  void getXattrImpl(const std::string& oid, const std::string& name, Callback<std::string> done,
                    Deadline deadline) override;
  void omapGetImpl(const std::string& oid, std::vector<std::string> keys,
                   Callback<std::map<std::string, std::string>> done, Deadline deadline) override;
  void omapListImpl(const std::string& oid, OmapListArgs args, Callback<OmapPage> done,
                    Deadline deadline) override;
  void listObjectsImpl(const std::string& cursor, std::uint32_t maxEntries,
                       Callback<ObjectPage> done, Deadline deadline) override;
  void usageImpl(Callback<StoreUsage> done, Deadline deadline) override;
  void mutateImpl(const std::string& oid, WriteOp op, Callback<std::uint64_t> done,
                  Deadline deadline) override;

 private:
  struct Request;
  RadosStore(const RadosOptions& options, std::unique_ptr<RadosConnection> conn);

  // Starts `request` now, or queues it until a slot frees up.
  void admit(std::unique_ptr<Request> request);
  void start(std::unique_ptr<Request> request);
  static void onComplete(void* completion, void* arg);
  void finished();

  RadosOptions options_;
  std::unique_ptr<RadosConnection> conn_;
  std::mutex mu_;  // guards the admission state below; never held across a librados call
  std::condition_variable idle_;
  unsigned inFlight_ = 0;
  std::deque<std::unique_ptr<Request>> waiting_;
  // For librados calls that have no asynchronous form (object listing, statistics); each is
  // bounded by a librados op timeout.
  ThreadPool blocking_;
};

}  // namespace tierfs::backends
