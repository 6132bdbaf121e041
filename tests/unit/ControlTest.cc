// The control protocol (common/control): every message round-trips, bad input is a named error,
// and the socket server serves, refuses strangers and replaces only a dead daemon's socket.
#include <fmt/format.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <variant>

#include "common/Encoding.h"
#include "common/control/Protocol.h"
#include "common/control/Socket.h"
#include "tests/support/Assertions.h"
#include "tests/support/TempDir.h"

namespace tierfs::control {
namespace {

using testing::TempDir;

TEST(ControlProtocol, EveryRequestRoundTrips) {
  const Request requests[] = {StatusRequest{""}, StatusRequest{"data/train"},
                              WarmRequest{{"a", "b/c", "."}, 32}, EvictRequest{{"x/y"}},
                              HintRequest{{"d/1", "d/0"}, 16}};
  for (const Request& r : requests) {
    auto back = decodeRequest(encodeRequest(r));
    ASSERT_OK(back);
    EXPECT_TRUE(*back == r) << r.index();
  }
}

TEST(ControlProtocol, EveryReplyRoundTrips) {
  DaemonStatus d{"/mnt/t", "rados pool 'p'", 1 << 30, 1 << 20, 7, 100, 3,
                 5 << 20,  6 << 20,          1,       2,       1, 40,  31};
  const TreeCounts c{10, 1000, 4, 400};
  const Reply replies[] = {
      StatusReply{d, std::nullopt},
      StatusReply{d, c},
      WarmProgress{c, c, 123, true, {{"a/b", "IoError: injected"}, {"c", "NotFound: gone"}}},
      EvictReply{c},
      ErrorReply{Status::permissionDenied("uid 65534 may not")},
      HintReply{100, 40, 56, 1 << 20, false},
      HintReply{100, 100, 100, 5 << 20, true},
  };
  for (const Reply& r : replies) {
    auto back = decodeReply(encodeReply(r));
    ASSERT_OK(back);
    EXPECT_TRUE(*back == r) << r.index();
  }
}

TEST(ControlProtocol, BadMessagesAreNamedErrors) {
  std::string other = encodeRequest(StatusRequest{"x"});
  other[0] = 2;  // a newer protocol
  auto r = decodeRequest(other);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kNotSupported);
  EXPECT_NE(r.error().message().find("version 2"), std::string::npos) << r.error().toString();

  std::string unknown = encodeRequest(StatusRequest{"x"});
  unknown[1] = 99;
  r = decodeRequest(unknown);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("unknown request type 99"), std::string::npos);

  const std::string whole = encodeRequest(WarmRequest{{"a", "b"}, 4});
  for (std::size_t n = 0; n < whole.size(); ++n) {  // every truncation
    EXPECT_FALSE(decodeRequest(whole.substr(0, n))) << n;
  }
  EXPECT_FALSE(decodeRequest(whole + "x"));  // trailing bytes

  Encoder huge;  // a count no message could hold is refused before anything is allocated
  huge.putU8(kProtocolVersion);
  huge.putU8(2);
  huge.putVarint(std::uint64_t{1} << 40);
  r = decodeRequest(huge.bytes());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kCorruption);

  auto reply = decodeReply(encodeRequest(StatusRequest{"x"}));  // a request where a reply goes
  ASSERT_FALSE(reply);
}

class ControlServerTest : public ::testing::Test {
 protected:
  std::string socketPath() const { return (dir_.path() / "run" / "t.sock").string(); }

  std::unique_ptr<Server> start(uid_t owner) {
    auto server =
        Server::start({.path = socketPath(), .owner = owner}, [](const Request& r, Connection& c) {
          const auto& status = std::get<StatusRequest>(r);
          StatusReply reply;
          reply.daemon.mountpoint = "asked " + status.path;
          (void)c.reply(reply);
        });
    EXPECT_OK(server);
    return server ? std::move(*server) : nullptr;
  }

  // The first reply to a status request for `path`.
  Result<Reply> ask(const std::string& path) {
    TIERFS_ASSIGN_OR_RETURN(UniqueFd fd, connectTo(socketPath()));
    std::optional<Reply> got;
    TIERFS_RETURN_IF_ERROR(call(fd.get(), StatusRequest{path}, [&](const Reply& r) {
      got = r;
      return false;
    }));
    if (!got) return failure(Status::unavailable("no reply"));
    return *got;
  }

  TempDir dir_;
};

TEST_F(ControlServerTest, AnswersARequestOverAPrivateSocket) {
  auto server = start(::geteuid());
  ASSERT_NE(server, nullptr);
  struct stat st {};
  ASSERT_EQ(::stat(socketPath().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  for (int i = 0; i < 3; ++i) {
    auto reply = ask(fmt::format("p{}", i));
    ASSERT_OK(reply);
    EXPECT_EQ(std::get<StatusReply>(*reply).daemon.mountpoint, fmt::format("asked p{}", i));
  }
  server.reset();
  EXPECT_NE(::access(socketPath().c_str(), F_OK), 0);  // removed when the daemon stops
  auto gone = connectTo(socketPath());
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), StatusCode::kNotFound);
  EXPECT_NE(gone.error().message().find("is the tierfs daemon running?"), std::string::npos);
}

TEST_F(ControlServerTest, RefusesAUserWhoIsNeitherRootNorTheOwner) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  auto server = start(/*owner=*/4242);
  ASSERT_NE(server, nullptr);
  // Even with the socket open to all, the server checks who connects (SO_PEERCRED).
  ASSERT_EQ(::chmod(socketPath().c_str(), 0666), 0);
  ASSERT_EQ(::chmod((dir_.path() / "run").c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(10);
    auto reply = ask("x");
    if (!reply) ::_exit(11);
    const auto* e = std::get_if<ErrorReply>(&*reply);
    if (e == nullptr || e->error.code() != StatusCode::kPermissionDenied) ::_exit(12);
    if (e->error.message().find("uid 65534") == std::string::npos) ::_exit(13);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setuid, 11: no reply, 12: not refused, 13: message";
  auto mine = ask("root");  // root is let in
  ASSERT_OK(mine);
  EXPECT_TRUE(std::holds_alternative<StatusReply>(*mine));
}

// [control] allow_users and allow_groups: the socket becomes connectable by all (0666), and the
// credentials decide: a listed uid, or a listed group among the peer's primary and supplementary
// groups, is served; anyone else still gets PermissionDenied.
TEST_F(ControlServerTest, LetsInOnlyTheUsersAndGroupsTheConfigNames) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as other users";
  auto server = Server::start(
      {.path = socketPath(), .owner = 4242, .allowUsers = {1001}, .allowGroups = {2002}},
      [](const Request&, Connection& c) { (void)c.reply(StatusReply{}); });
  ASSERT_OK(server);
  struct stat st {};
  ASSERT_EQ(::stat(socketPath().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  ASSERT_EQ(::chmod((dir_.path() / "run").c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  // Asks as uid/gid with the supplementary groups; 0: served, 1: refused, 2: other failure.
  auto askAs = [&](uid_t uid, gid_t gid, std::vector<gid_t> groups) {
    const pid_t child = ::fork();
    if (child == 0) {
      if (::setgroups(groups.size(), groups.data()) != 0 || ::setgid(gid) != 0 ||
          ::setuid(uid) != 0) {
        ::_exit(3);
      }
      auto reply = ask("x");
      if (!reply) ::_exit(2);
      if (std::holds_alternative<StatusReply>(*reply)) ::_exit(0);
      const auto* e = std::get_if<ErrorReply>(&*reply);
      ::_exit(e != nullptr && e->error.code() == StatusCode::kPermissionDenied ? 1 : 2);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
  };
  EXPECT_EQ(askAs(1001, 1001, {}), 0) << "a listed user";
  EXPECT_EQ(askAs(1002, 2002, {}), 0) << "a listed primary group";
  EXPECT_EQ(askAs(1003, 1003, {5, 2002}), 0) << "a listed supplementary group";
  EXPECT_EQ(askAs(1004, 1004, {5}), 1) << "neither";
  EXPECT_EQ(askAs(65534, 65534, {}), 1) << "nobody";
}

TEST_F(ControlServerTest, ReplacesOnlyADeadDaemonsSocket) {
  auto first = start(::geteuid());
  ASSERT_NE(first, nullptr);
  auto second = Server::start({.path = socketPath(), .owner = ::geteuid()}, {});
  ASSERT_FALSE(second);  // a live daemon keeps its socket
  EXPECT_NE(second.error().message().find("in use by a running daemon"), std::string::npos);
  EXPECT_OK(ask("still"));

  // A dead daemon's socket file: bound, never listened to, left behind.
  first.reset();
  {
    auto fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    socketPath().copy(addr.sun_path, socketPath().size());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ::close(fd);
  }
  auto third = start(::geteuid());
  ASSERT_NE(third, nullptr);
  EXPECT_OK(ask("again"));
  third.reset();

  std::ofstream(socketPath()) << "not a socket";
  auto fourth = Server::start({.path = socketPath(), .owner = ::geteuid()}, {});
  ASSERT_FALSE(fourth);
  EXPECT_NE(fourth.error().message().find("is not a socket"), std::string::npos);
  std::ifstream kept(socketPath());
  std::string content;
  std::getline(kept, content);
  EXPECT_EQ(content, "not a socket");  // nothing lost

  auto tooLong = Server::start({.path = "/" + std::string(200, 'x')}, {});
  ASSERT_FALSE(tooLong);
  EXPECT_EQ(tooLong.error().code(), StatusCode::kInvalidArgument);
}

TEST(ControlSocketPath, IsDerivedFromTheMountPoint) {
  const std::string dir = socketDirectory();
  if (::geteuid() == 0) {
    EXPECT_EQ(dir, "/run/tierfs");
  }
  EXPECT_EQ(defaultSocketPath("/mnt/tierfs"), dir + "/mnt-tierfs.sock");
  EXPECT_EQ(defaultSocketPath("/"), dir + "/root.sock");
  EXPECT_EQ(defaultSocketPath("/data/my set"), dir + "/data-my%20set.sock");
  EXPECT_LT(defaultSocketPath("/" + std::string(300, 'a')).size(), dir.size() + 90);
}

}  // namespace
}  // namespace tierfs::control
