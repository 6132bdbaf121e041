#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/FileUtil.h"
#include "common/control/Protocol.h"

namespace tierfs::control {

// One client of the control socket, as a request handler sees it.
class Connection {
 public:
  Connection(UniqueFd fd, uid_t peerUid) : fd_(std::move(fd)), peerUid_(peerUid) {}
  uid_t peerUid() const { return peerUid_; }
  // Unavailable when the client is gone (it was interrupted: the handler should stop).
  Status reply(const Reply& reply);
  // Ends the connection early (the server is stopping): the handler's next reply() fails.
  void shutdown();
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
  uid_t peerUid_;
};

using Handler = std::function<void(const Request&, Connection&)>;

struct ServerOptions {
  std::string path;  // of the socket; its directory is created (0755) when missing
  uid_t owner = 0;   // the mount's owner: with root, always let in
  // Further users let in ([control] allow_users), and users whose primary or supplementary
  // groups include one of `allowGroups` ([control] allow_groups).
  std::vector<uid_t> allowUsers;
  std::vector<gid_t> allowGroups;
};

// The daemon's end: a Unix stream socket that accepts on its own thread and serves each
// connection (one request, its replies) on a thread of its own. The socket is mode 0600 when
// only root and `owner` may use it, 0666 when others may; either way the peer's credentials
// (SO_PEERCRED, SO_PEERGROUPS) decide: a user not let in gets a PermissionDenied reply and is
// closed, whatever the file's mode. A socket file left by a daemon that died is replaced; a live
// one, or any other file at the path, is an error.
class Server {
 public:
  static Result<std::unique_ptr<Server>> start(ServerOptions options, Handler handler);
  ~Server();  // stops accepting, ends the open connections, waits for their handlers, unlinks
  const std::string& path() const { return options_.path; }

 private:
  Server(ServerOptions options, Handler handler, UniqueFd listener);
  void acceptLoop();
  // Whether the peer on `fd` (of `uid`) may use the socket.
  bool admits(int fd, uid_t uid, gid_t gid) const;
  void serve(const std::shared_ptr<Connection>& connection, bool admitted);

  const ServerOptions options_;
  const Handler handler_;
  UniqueFd listener_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;  // guards connections_
  std::list<std::pair<std::shared_ptr<Connection>, std::thread>> connections_;
  std::thread acceptor_;
};

// The CLI's end: connects to the daemon's socket. Errors name the path and say what to check.
Result<UniqueFd> connectTo(const std::string& path);

// Sends `request` and calls `onReply` for each reply until it returns false or the daemon
// closes the connection.
Status call(int fd, const Request& request, const std::function<bool(const Reply&)>& onReply);

// Where a mount's socket goes by default: socketDirectory()/<the mount point, escaped>.sock.
std::string defaultSocketPath(const std::string& mountpoint);
// /run/tierfs for root; for another user $XDG_RUNTIME_DIR/tierfs, else /tmp/tierfs-<uid>.
std::string socketDirectory();

}  // namespace tierfs::control
