#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "common/ProcessIdentity.h"

namespace tierfs {
namespace {

// A child's identity, read from a pipe, and its PID; the child exits once it has written.
std::pair<std::string, pid_t> childIdentity() {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    const std::string& id = processIdentity();
    (void)!::write(fds[1], id.data(), id.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string id;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) id.append(buf, n);
  ::close(fds[0]);
  return {id, pid};
}

std::string replaced(std::string id, const std::string& key, const std::string& value) {
  auto at = id.find(key + "=");
  auto end = id.find(' ', at);
  return id.replace(at, end == std::string::npos ? std::string::npos : end - at, key + "=" + value);
}

TEST(ProcessIdentityTest, NamesThisProcess) {
  const std::string& id = processIdentity();
  for (const char* key : {"host=", "boot=", "pidns=pid:[", "start="}) {
    EXPECT_NE(id.find(key), std::string::npos) << id;
  }
  EXPECT_NE(id.find(" pid=" + std::to_string(::getpid()) + " "), std::string::npos) << id;
  EXPECT_EQ(processLiveness(id), Liveness::kAlive);
}

TEST(ProcessIdentityTest, AnExitedProcessIsGoneBeforeAndAfterItIsReaped) {
  auto [id, pid] = childIdentity();
  ASSERT_NE(id, processIdentity());
  // The child has written and is exiting: a zombie until waited for, which counts as gone.
  for (int i = 0; i < 200 && processLiveness(id) != Liveness::kGone; ++i) ::usleep(5000);
  EXPECT_EQ(processLiveness(id), Liveness::kGone) << id;
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(processLiveness(id), Liveness::kGone) << id;
}

TEST(ProcessIdentityTest, APidReusedByAnotherProcessIsGone) {
  // This process's PID, with another start time: a process that once had the PID.
  EXPECT_EQ(processLiveness(replaced(processIdentity(), "start", "1")), Liveness::kGone);
}

TEST(ProcessIdentityTest, AnotherBootOrNamespaceCannotBeTold) {
  const std::string& id = processIdentity();
  EXPECT_EQ(processLiveness(replaced(id, "boot", "00000000-0000-0000-0000-000000000000")),
            Liveness::kUnknown);
  EXPECT_EQ(processLiveness(replaced(id, "pidns", "pid:[1]")), Liveness::kUnknown);
  for (const char* bad : {"", "garbage", "pid=1 start=1", "boot= pidns= pid=1 start=1"}) {
    EXPECT_EQ(processLiveness(bad), Liveness::kUnknown) << bad;
  }
  EXPECT_EQ(processLiveness(replaced(id, "pid", "x")), Liveness::kUnknown);
}

}  // namespace
}  // namespace tierfs
