#include "backends/RadosStore.h"

#include <fmt/format.h>

#include <list>
#include <rados/librados.hpp>
#include <set>

#include "backends/Keyring.h"

namespace tierfs::backends {

struct RadosConnection {
  librados::Rados rados;
  librados::IoCtx io;
  ~RadosConnection() {
    io.close();
    rados.shutdown();
  }
};

// One librados call in flight: how to submit it, and what to do with its outcome. The output
// buffers it fills live in state that `submit` and `finish` share.
struct RadosStore::Request {
  std::function<int(librados::IoCtx&, librados::AioCompletion*)> submit;
  std::function<void(int rc, std::uint64_t version)> finish;
  librados::AioCompletion* completion = nullptr;
  RadosStore* store = nullptr;
};

namespace {

Status radosError(int rc, std::string_view what) { return Status::fromErrno(rc, what); }

Status setOption(librados::Rados& rados, const char* name, const std::string& value) {
  int rc = rados.conf_set(name, value.c_str());
  if (rc < 0) return radosError(rc, fmt::format("setting Ceph option {}={}", name, value));
  return Status::ok();
}

Status configure(librados::Rados& rados, const RadosOptions& o) {
  int rc = rados.conf_read_file(o.conf.empty() ? nullptr : o.conf.c_str());
  if (rc < 0) {
    return radosError(rc, fmt::format("reading Ceph config '{}'",
                                      o.conf.empty() ? "(default search path)" : o.conf));
  }
  if (!o.keyring.empty()) TIERFS_RETURN_IF_ERROR(setOption(rados, "keyring", o.keyring));
  // The keyring librados will read, named here or by the conf (metavariables expanded).
  std::string keyrings;
  if (rados.conf_get("keyring", keyrings) == 0) {
    TIERFS_RETURN_IF_ERROR(checkKeyringList(keyrings, o.allowOpenKeyring));
  }
  // librados waits forever by default (rados_osd_op_timeout=0, client_mount_timeout=300): a dead
  // OSD or monitor would hang the filesystem. Bound every wait by our timeout.
  auto secs = std::to_string(
      std::max<long>(1, std::chrono::duration_cast<std::chrono::seconds>(o.timeout).count()));
  for (const char* name :
       {"client_mount_timeout", "rados_mon_op_timeout", "rados_osd_op_timeout"}) {
    TIERFS_RETURN_IF_ERROR(setOption(rados, name, secs));
  }
  // The Objecter asks the monitor for a newer OSD map only for ops in flight longer than
  // objecter_timeout (10 s), checked every objecter_tick_interval (5 s). With an op timeout
  // shorter than that, every op to a restarted OSD (same address, new instance) timed out before
  // the client looked for the new map, and it kept failing after the OSD was back: found by
  // fuse_backend_faults. Mark ops laggy after half the timeout and check every second.
  const double laggy =
      std::max(0.5, std::chrono::duration<double>(o.timeout).count() / 2);  // seconds
  TIERFS_RETURN_IF_ERROR(setOption(rados, "objecter_timeout", fmt::format("{:.3f}", laggy)));
  TIERFS_RETURN_IF_ERROR(setOption(rados, "objecter_tick_interval", "1"));
  // Our own admission control bounds requests; keep the Objecter's byte throttle (100 MiB by
  // default) from blocking a submitting thread when many large objects are in flight.
  TIERFS_RETURN_IF_ERROR(setOption(rados, "objecter_inflight_op_bytes",
                                   std::to_string(std::uint64_t{o.maxInFlight} << 27)));
  TIERFS_RETURN_IF_ERROR(
      setOption(rados, "objecter_inflight_ops", std::to_string(o.maxInFlight * 4 + 1024)));
  return Status::ok();
}

std::string toString(const librados::bufferlist& bl) {
  std::string out;
  out.reserve(bl.length());
  for (const auto& p : bl.buffers()) out.append(p.c_str(), p.length());
  return out;
}

librados::bufferlist toBufferlist(const std::string& s) {
  librados::bufferlist bl;
  bl.append(s.data(), s.size());
  return bl;
}

}  // namespace

Result<std::unique_ptr<RadosStore>> RadosStore::connect(const RadosOptions& options) {
  if (options.pool.empty()) return failure(Status::invalidArgument("no RADOS pool given"));
  if (options.maxInFlight == 0) {
    return failure(Status::invalidArgument("requests in flight must be at least 1"));
  }
  auto conn = std::make_unique<RadosConnection>();
  int rc = conn->rados.init2(options.user.c_str(), "ceph", 0);
  if (rc < 0) {
    return failure(
        radosError(rc, fmt::format("Ceph user name '{}' (expected client.NAME)", options.user)));
  }
  TIERFS_RETURN_IF_ERROR(configure(conn->rados, options));
  rc = conn->rados.connect();
  if (rc < 0) {
    return failure(
        Status::unavailable(fmt::format("cannot connect to the Ceph cluster of '{}' as {}: {}",
                                        options.conf, options.user, std::strerror(-rc))));
  }
  rc = conn->rados.ioctx_create(options.pool.c_str(), conn->io);
  if (rc == -ENOENT) {
    return failure(Status::notFound(fmt::format("RADOS pool '{}' does not exist", options.pool)));
  }
  if (rc < 0) return failure(radosError(rc, fmt::format("opening pool '{}'", options.pool)));
  conn->io.set_namespace(options.nspace);
  return std::unique_ptr<RadosStore>(new RadosStore(options, std::move(conn)));
}

RadosStore::RadosStore(const RadosOptions& options, std::unique_ptr<RadosConnection> conn)
    : ObjectStore(options.timeout),
      options_(options),
      conn_(std::move(conn)),
      blocking_(1, "rados-blocking") {}

RadosStore::~RadosStore() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return inFlight_ == 0 && waiting_.empty(); });
}

std::string RadosStore::describe() const {
  if (options_.nspace.empty()) {
    return fmt::format("rados pool '{}' as {}", options_.pool, options_.user);
  }
  return fmt::format("rados pool '{}' namespace '{}' as {}", options_.pool, options_.nspace,
                     options_.user);
}

void RadosStore::admit(std::unique_ptr<Request> request) {
  request->store = this;
  {
    std::lock_guard lock(mu_);
    if (inFlight_ >= options_.maxInFlight) {
      waiting_.push_back(std::move(request));
      return;
    }
    ++inFlight_;
  }
  start(std::move(request));
}

void RadosStore::start(std::unique_ptr<Request> request) {
  request->completion =
      librados::Rados::aio_create_completion(request.get(), &RadosStore::onComplete);
  int rc = request->submit(conn_->io, request->completion);
  if (rc < 0) {
    request->completion->release();
    request->finish(rc, 0);
    finished();
    return;
  }
  request.release();  // owned by the completion callback from here on
}

void RadosStore::onComplete(void* /*completion*/, void* arg) {
  std::unique_ptr<Request> request(static_cast<Request*>(arg));
  int rc = request->completion->get_return_value();
  std::uint64_t version = request->completion->get_version64();
  request->completion->release();
  RadosStore* store = request->store;
  request->finish(rc, version);
  request.reset();
  store->finished();
}

void RadosStore::finished() {
  std::unique_ptr<Request> next;
  {
    std::lock_guard lock(mu_);
    if (waiting_.empty()) {
      if (--inFlight_ == 0) idle_.notify_all();
      return;
    }
    next = std::move(waiting_.front());
    waiting_.pop_front();
  }
  start(std::move(next));  // the slot passes straight to the next request
}

void RadosStore::readImpl(const std::string& oid, std::uint64_t offset, std::uint64_t length,
                          Callback<Bytes> done, Deadline) {
  auto bl = std::make_shared<librados::bufferlist>();
  auto request = std::make_unique<Request>();
  request->submit = [=](librados::IoCtx& io, librados::AioCompletion* c) {
    librados::ObjectReadOperation op;
    op.read(offset, length, bl.get(), nullptr);
    return io.aio_operate(oid, c, &op, nullptr);
  };
  request->finish = [bl, done = std::move(done)](int rc, std::uint64_t) {
    if (rc < 0) return done(failure(radosError(rc, "rados read")));
    // The reply's data is usually one buffer: hand it over as it is. c_str() joins the pieces
    // (one copy) only when it is not.
    std::string_view view(bl->length() ? bl->c_str() : "", bl->length());
    done(Bytes::shared(bl, view));
  };
  admit(std::move(request));
}

void RadosStore::statImpl(const std::string& oid, Callback<ObjectStat> done, Deadline) {
  struct Out {
    std::uint64_t size = 0;
    timespec mtime{};
  };
  auto out = std::make_shared<Out>();
  auto request = std::make_unique<Request>();
  request->submit = [=](librados::IoCtx& io, librados::AioCompletion* c) {
    librados::ObjectReadOperation op;
    op.stat2(&out->size, &out->mtime, nullptr);
    return io.aio_operate(oid, c, &op, nullptr);
  };
  request->finish = [out, done = std::move(done)](int rc, std::uint64_t version) {
    if (rc < 0) return done(failure(radosError(rc, "rados stat")));
    done(ObjectStat{out->size, version, out->mtime.tv_sec});
  };
  admit(std::move(request));
}

void RadosStore::getXattrImpl(const std::string& oid, const std::string& name,
                              Callback<std::string> done, Deadline) {
  auto bl = std::make_shared<librados::bufferlist>();
  auto request = std::make_unique<Request>();
  request->submit = [=](librados::IoCtx& io, librados::AioCompletion* c) {
    librados::ObjectReadOperation op;
    op.getxattr(name.c_str(), bl.get(), nullptr);
    return io.aio_operate(oid, c, &op, nullptr);
  };
  request->finish = [bl, done = std::move(done)](int rc, std::uint64_t) {
    if (rc < 0) return done(failure(radosError(rc, "rados getxattr")));
    done(toString(*bl));
  };
  admit(std::move(request));
}

void RadosStore::omapGetImpl(const std::string& oid, std::vector<std::string> keys,
                             Callback<std::map<std::string, std::string>> done, Deadline) {
  auto vals = std::make_shared<std::map<std::string, librados::bufferlist>>();
  auto wanted = std::make_shared<std::set<std::string>>(keys.begin(), keys.end());
  auto request = std::make_unique<Request>();
  request->submit = [=](librados::IoCtx& io, librados::AioCompletion* c) {
    librados::ObjectReadOperation op;
    op.omap_get_vals_by_keys(*wanted, vals.get(), nullptr);
    return io.aio_operate(oid, c, &op, nullptr);
  };
  request->finish = [vals, done = std::move(done)](int rc, std::uint64_t) {
    if (rc < 0) return done(failure(radosError(rc, "rados omap get")));
    std::map<std::string, std::string> out;
    for (auto& [k, v] : *vals) out.emplace(k, toString(v));
    done(std::move(out));
  };
  admit(std::move(request));
}

void RadosStore::omapListImpl(const std::string& oid, OmapListArgs args, Callback<OmapPage> done,
                              Deadline) {
  struct Out {
    std::map<std::string, librados::bufferlist> vals;
    bool more = false;
  };
  auto out = std::make_shared<Out>();
  auto request = std::make_unique<Request>();
  request->submit = [=](librados::IoCtx& io, librados::AioCompletion* c) {
    librados::ObjectReadOperation op;
    op.omap_get_vals2(args.startAfter, args.prefix, args.maxEntries, &out->vals, &out->more,
                      nullptr);
    return io.aio_operate(oid, c, &op, nullptr);
  };
  request->finish = [out, done = std::move(done)](int rc, std::uint64_t version) {
    if (rc < 0) return done(failure(radosError(rc, "rados omap list")));
    OmapPage page;
    page.version = version;  // a read's completion carries the version of the object it read
    page.entries.reserve(out->vals.size());
    for (auto& [k, v] : out->vals) page.entries.emplace_back(k, toString(v));
    page.more = out->more;
    done(std::move(page));
  };
  admit(std::move(request));
}

void RadosStore::listObjectsImpl(const std::string& cursor, std::uint32_t maxEntries,
                                 Callback<ObjectPage> done, Deadline) {
  // librados has no asynchronous listing; its op timeout bounds this call.
  blocking_.post([this, cursor, maxEntries, done = std::move(done)] {
    librados::IoCtx& io = conn_->io;
    librados::ObjectCursor start = io.object_list_begin();
    if (!cursor.empty() && !start.from_str(cursor)) {
      return done(failure(Status::invalidArgument("bad object listing cursor")));
    }
    std::vector<librados::ObjectItem> items;
    librados::ObjectCursor next;
    int rc = io.object_list(start, io.object_list_end(), maxEntries, {}, &items, &next);
    if (rc < 0) return done(failure(radosError(rc, "rados object list")));
    ObjectPage page;
    for (auto& item : items) page.names.push_back(std::move(item.oid));
    page.more = !io.object_list_is_end(next);
    if (page.more) page.nextCursor = next.to_str();
    done(std::move(page));
  });
}

void RadosStore::usageImpl(Callback<StoreUsage> done, Deadline deadline) {
  // librados has no asynchronous form of these two monitor queries; rados_mon_op_timeout bounds
  // each of them.
  blocking_.post([this, deadline, done = std::move(done)] {
    if (deadline.expired()) return;  // answered TimedOut while it waited: don't ask late
    librados::cluster_stat_t cluster{};
    int rc = conn_->rados.cluster_stat(cluster);
    if (rc < 0) return done(failure(radosError(rc, "rados cluster stat")));
    // The monitor answers zeros until a ceph-mgr has sent it the placement groups' statistics:
    // never, without a mgr, and for a few seconds after one starts.
    if (cluster.kb == 0) {
      return done(failure(Status::unavailable(
          "the cluster reports no capacity yet; its usage statistics come from ceph-mgr "
          "(is one running?)")));
    }
    std::list<std::string> pools{options_.pool};
    librados::stats_map pool;
    rc = conn_->rados.get_pool_stats(pools, pool);
    if (rc < 0) return done(failure(radosError(rc, "rados pool stats")));
    StoreUsage u;
    u.totalBytes = cluster.kb << 10;
    u.usedBytes = cluster.kb_used << 10;
    u.availBytes = cluster.kb_avail << 10;
    // A pool whose placement groups have not reported yet is missing from the answer.
    if (auto it = pool.find(options_.pool); it != pool.end()) u.objects = it->second.num_objects;
    done(u);
  });
}

namespace {

struct GuardOutputs {
  int omapCmpResult = 0;  // omap_cmp reports through a pointer that must outlive the call
};

void addGuard(librados::ObjectWriteOperation& op, const WriteOp::Guard& guard, GuardOutputs& out) {
  if (std::holds_alternative<WriteOp::AssertExists>(guard)) {
    op.assert_exists();
  } else if (std::holds_alternative<WriteOp::CreateExclusive>(guard)) {
    op.create(true);
  } else if (const auto* x = std::get_if<WriteOp::XattrEquals>(&guard)) {
    op.cmpxattr(x->name.c_str(), LIBRADOS_CMPXATTR_OP_EQ, toBufferlist(x->value));
  } else if (const auto* o = std::get_if<WriteOp::OmapEquals>(&guard)) {
    std::map<std::string, std::pair<librados::bufferlist, int>> assertion;
    assertion.emplace(o->key, std::make_pair(toBufferlist(o->value), LIBRADOS_CMPXATTR_OP_EQ));
    op.omap_cmp(assertion, &out.omapCmpResult);
  }
}

// The WriteOp outlives the request (the request's callbacks own it), so object data is handed
// to librados without a copy, as librados' own synchronous calls do.
void addMutation(librados::ObjectWriteOperation& op, const WriteOp::Mutation& m) {
  if (const auto* w = std::get_if<WriteOp::WriteFull>(&m)) {
    librados::bufferlist bl;
    bl.append(ceph::buffer::create_static(static_cast<unsigned>(w->data.size()),
                                          const_cast<char*>(w->data.data())));
    op.write_full(bl);
  } else if (const auto* x = std::get_if<WriteOp::SetXattr>(&m)) {
    op.setxattr(x->name.c_str(), toBufferlist(x->value));
  } else if (const auto* s = std::get_if<WriteOp::OmapSet>(&m)) {
    op.omap_set({{s->key, toBufferlist(s->value)}});
  } else if (const auto* r = std::get_if<WriteOp::OmapRemove>(&m)) {
    op.omap_rm_keys({r->key});
  } else if (std::holds_alternative<WriteOp::Remove>(m)) {
    op.remove();
  }
}

}  // namespace

void RadosStore::mutateImpl(const std::string& oid, WriteOp op, Callback<std::uint64_t> done,
                            Deadline) {
  if (op.empty()) return done(failure(Status::invalidArgument("empty write operation")));
  auto outputs = std::make_shared<GuardOutputs>();
  auto shared = std::make_shared<WriteOp>(std::move(op));
  auto request = std::make_unique<Request>();
  request->submit = [=](librados::IoCtx& io, librados::AioCompletion* c) {
    librados::ObjectWriteOperation wop;
    for (const auto& g : shared->guards()) addGuard(wop, g, *outputs);
    for (const auto& m : shared->mutations()) addMutation(wop, m);
    return io.aio_operate(oid, c, &wop);
  };
  request->finish = [outputs, shared, done = std::move(done)](int rc, std::uint64_t version) {
    // A successful cmpxattr as the last sub-op makes the op return 1: only r < 0 is failure.
    if (rc == -ECANCELED) {
      return done(failure(Status::preconditionFailed(
          "a guard (xattr or omap comparison) did not hold; nothing was applied")));
    }
    if (rc < 0) return done(failure(radosError(rc, "rados write")));
    done(version);
  };
  admit(std::move(request));
}

}  // namespace tierfs::backends
