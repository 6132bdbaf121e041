#include "common/control/Socket.h"

#include <fmt/format.h>
#include <limits.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace tierfs::control {
namespace {

Result<sockaddr_un> addressOf(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return failure(Status::invalidArgument(fmt::format(
        "control socket path '{}' must be 1 to {} bytes long", path, sizeof addr.sun_path - 1)));
  }
  path.copy(addr.sun_path, path.size());
  return addr;
}

Result<UniqueFd> newSocket() {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return failure(Status::fromErrno(errno, "control socket: socket()"));
  return fd;
}

// Connects, giving the raw errno on failure (0 on success).
int connectRaw(int fd, const sockaddr_un& addr) {
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  return rc == 0 ? 0 : errno;
}

// A socket file at `path` from a daemon that is gone is removed; anything else there is an error.
Status clearStale(const std::string& path, const sockaddr_un& addr) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::ok();
    return Status::fromErrno(errno, fmt::format("control socket {}: stat", path));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return Status::alreadyExists(
        fmt::format("control socket {}: the path exists and is not a socket", path));
  }
  TIERFS_ASSIGN_OR_RETURN(UniqueFd probe, newSocket());
  const int err = connectRaw(probe.get(), addr);
  if (err == 0) {
    return Status::alreadyExists(
        fmt::format("control socket {} is in use by a running daemon (another mount?)", path));
  }
  if (err != ECONNREFUSED) {
    return Status::fromErrno(err, fmt::format("control socket {}: probing the old socket", path));
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status::fromErrno(errno,
                             fmt::format("control socket {}: removing the stale socket", path));
  }
  return Status::ok();
}

}  // namespace

Status Connection::reply(const Reply& reply) { return sendFrame(fd_.get(), encodeReply(reply)); }

void Connection::shutdown() { ::shutdown(fd_.get(), SHUT_RDWR); }

Result<std::unique_ptr<Server>> Server::start(ServerOptions options, Handler handler) {
  TIERFS_ASSIGN_OR_RETURN(sockaddr_un addr, addressOf(options.path));
  const std::filesystem::path dir = std::filesystem::path(options.path).parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return failure(Status::fromErrno(
          ec.value(), fmt::format("control socket {}: creating {}", options.path, dir.string())));
    }
  }
  TIERFS_RETURN_IF_ERROR(clearStale(options.path, addr));
  TIERFS_ASSIGN_OR_RETURN(UniqueFd fd, newSocket());
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return failure(Status::fromErrno(errno, fmt::format("control socket {}: bind", options.path)));
  }
  // Before listen() nobody can connect, so the mode is set before anyone could use the socket.
  // Others can connect only when the config lets some of them in; their credentials decide.
  const bool others = !options.allowUsers.empty() || !options.allowGroups.empty();
  if (::chmod(options.path.c_str(), others ? 0666 : 0600) != 0 ||
      ::chown(options.path.c_str(), options.owner, static_cast<gid_t>(-1)) != 0) {
    Status s =
        Status::fromErrno(errno, fmt::format("control socket {}: chmod/chown", options.path));
    ::unlink(options.path.c_str());
    return failure(s);
  }
  if (::listen(fd.get(), 16) != 0) {
    Status s = Status::fromErrno(errno, fmt::format("control socket {}: listen", options.path));
    ::unlink(options.path.c_str());
    return failure(s);
  }
  return std::unique_ptr<Server>(new Server(std::move(options), std::move(handler), std::move(fd)));
}

Server::Server(ServerOptions options, Handler handler, UniqueFd listener)
    : options_(std::move(options)), handler_(std::move(handler)), listener_(std::move(listener)) {
  acceptor_ = std::thread([this] { acceptLoop(); });
}

Server::~Server() {
  stopping_ = true;
  ::shutdown(listener_.get(), SHUT_RDWR);  // wakes accept()
  acceptor_.join();
  std::list<std::pair<std::shared_ptr<Connection>, std::thread>> open;
  {
    std::lock_guard lock(mu_);
    open.swap(connections_);
  }
  for (auto& [connection, thread] : open) {
    connection->shutdown();
    thread.join();
  }
  ::unlink(options_.path.c_str());
}

void Server::acceptLoop() {
  for (;;) {
    UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (stopping_) return;
    if (fd.get() < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      spdlog::error("control socket {}: accept: {}", options_.path, std::strerror(errno));
      return;
    }
    ucred peer{};
    socklen_t length = sizeof peer;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) continue;
    const bool admitted = admits(fd.get(), peer.uid, peer.gid);
    auto connection = std::make_shared<Connection>(std::move(fd), peer.uid);
    std::lock_guard lock(mu_);
    // Threads of connections that ended are joined here, so they do not pile up.
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (it->first.use_count() == 1) {
        it->second.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
    auto& slot = connections_.emplace_back(connection, std::thread());
    slot.second = std::thread([this, connection, admitted] { serve(connection, admitted); });
  }
}

bool Server::admits(int fd, uid_t uid, gid_t gid) const {
  auto has = [](const auto& list, auto id) {
    return std::find(list.begin(), list.end(), id) != list.end();
  };
  if (uid == 0 || uid == options_.owner || has(options_.allowUsers, uid)) return true;
  if (options_.allowGroups.empty()) return false;
  if (has(options_.allowGroups, gid)) return true;
  // The supplementary groups the peer had when it connected.
  std::vector<gid_t> groups(NGROUPS_MAX);
  socklen_t length = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &length) != 0) return false;
  groups.resize(length / sizeof(gid_t));
  return std::any_of(groups.begin(), groups.end(),
                     [&](gid_t g) { return has(options_.allowGroups, g); });
}

void Server::serve(const std::shared_ptr<Connection>& c, bool admitted) {
  if (!admitted) {
    spdlog::warn(
        "control socket {}: refused uid {} (not root, the owner (uid {}), nor let in by "
        "[control] allow_users or allow_groups)",
        options_.path, c->peerUid(), options_.owner);
    (void)c->reply(ErrorReply{Status::permissionDenied(
        fmt::format("uid {} may not control this mount: only root, its owner (uid {}) and the "
                    "users and groups its [control] allow_users and allow_groups name may",
                    c->peerUid(), options_.owner))});
    return;
  }
  auto frame = recvFrame(c->fd());
  if (!frame || !*frame) return;  // gone before asking
  auto request = decodeRequest(**frame);
  if (!request) {
    (void)c->reply(ErrorReply{request.error()});
    return;
  }
  handler_(*request, *c);
}

Result<UniqueFd> connectTo(const std::string& path) {
  TIERFS_ASSIGN_OR_RETURN(sockaddr_un addr, addressOf(path));
  TIERFS_ASSIGN_OR_RETURN(UniqueFd fd, newSocket());
  const int err = connectRaw(fd.get(), addr);
  if (err == 0) return fd;
  switch (err) {
    case ENOENT:
      return failure(Status::notFound(
          fmt::format("no control socket at {}: is the tierfs daemon running?", path)));
    case EACCES:
    case EPERM:
      return failure(Status::permissionDenied(fmt::format(
          "control socket {}: permission denied (only root, the mount's owner and the users its "
          "[control] allow_users and allow_groups name may use it)",
          path)));
    case ECONNREFUSED:
      return failure(Status::unavailable(
          fmt::format("control socket {}: nobody listens (the daemon has gone)", path)));
    default:
      return failure(Status::fromErrno(err, fmt::format("control socket {}: connect", path)));
  }
}

Status call(int fd, const Request& request, const std::function<bool(const Reply&)>& onReply) {
  TIERFS_RETURN_IF_ERROR(sendFrame(fd, encodeRequest(request)));
  for (;;) {
    TIERFS_ASSIGN_OR_RETURN(auto frame, recvFrame(fd));
    if (!frame) return Status::ok();
    TIERFS_ASSIGN_OR_RETURN(Reply reply, decodeReply(*frame));
    if (!onReply(reply)) return Status::ok();
  }
}

std::string defaultSocketPath(const std::string& mountpoint) {
  std::string name;
  for (char ch : mountpoint) {
    if (ch == '/') {
      if (!name.empty() && name.back() != '-') name += '-';
    } else if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_') {
      name += ch;
    } else {
      name += fmt::format("%{:02x}", static_cast<unsigned char>(ch));
    }
  }
  while (!name.empty() && name.back() == '-') name.pop_back();
  if (name.empty()) name = "root";
  if (name.size() > 80) {
    name = fmt::format("{}-{:016x}", name.substr(name.size() - 60),
                       std::hash<std::string>{}(mountpoint));
  }
  return socketDirectory() + "/" + name + ".sock";
}

std::string socketDirectory() {
  if (::geteuid() == 0) return "/run/tierfs";
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && *runtime == '/') {
    return std::string(runtime) + "/tierfs";
  }
  return fmt::format("/tmp/tierfs-{}", ::geteuid());
}

}  // namespace tierfs::control
