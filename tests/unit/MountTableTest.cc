#include <gtest/gtest.h>

#include "fs/fuse/MountTable.h"

namespace tierfs::fs {
namespace {

// Lines as the kernel writes them (proc(5)), with and without optional fields.
constexpr std::string_view kMountInfo =
    "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
    "40 22 0:35 / /tmp rw,nosuid,nodev shared:20 - tmpfs tmpfs rw\n"
    "91 40 0:52 / /tmp/my\\040data/mnt rw,nosuid,nodev,relatime shared:50 - fuse.tierfs tierfs "
    "rw,user_id=0,group_id=0,default_permissions\n"
    "95 91 0:55 / /tmp/my\\040data/mnt rw,relatime - fuse.tierfs tierfs rw,user_id=0,group_id=0\n"
    "96 22 0:56 / /srv/data rw - fuseblk /dev/sdb1 rw\n"
    "this line is not a mount\n"
    "97 22 0:57 / /srv/nodash rw shared:9 ext4 /dev/sdc rw\n";

TEST(MountTableTest, ParsesFieldsAroundOptionalOnes) {
  const auto mounts = parseMountInfo(kMountInfo);
  ASSERT_EQ(mounts.size(), 5u);  // the two malformed lines are skipped
  EXPECT_EQ(mounts[0].mountPoint, "/");
  EXPECT_EQ(mounts[0].fsType, "ext4");
  EXPECT_EQ(mounts[0].source, "/dev/nvme0n1p2");
  EXPECT_EQ(mounts[0].major, 259u);
  EXPECT_EQ(mounts[0].minor, 2u);
  EXPECT_EQ(mounts[3].fsType, "fuse.tierfs");  // no optional field before the "-"
  EXPECT_EQ(mounts[3].minor, 55u);
}

TEST(MountTableTest, DecodesOctalEscapesInPaths) {
  const auto mounts = parseMountInfo(kMountInfo);
  EXPECT_EQ(mounts[2].mountPoint, "/tmp/my data/mnt");
  EXPECT_EQ(parseMountInfo("1 0 0:1 / /a\\134b\\011c rw - tmpfs t rw\n").at(0).mountPoint,
            "/a\\b\tc");
  // A backslash not followed by three octal digits is kept as it is.
  EXPECT_EQ(parseMountInfo("1 0 0:1 / /a\\9b\\ rw - tmpfs t rw\n").at(0).mountPoint, "/a\\9b\\");
}

TEST(MountTableTest, FindsTheTopmostMountAtAPath) {
  const auto mounts = parseMountInfo(kMountInfo);
  auto top = findMountAt(mounts, "/tmp/my data/mnt");
  ASSERT_TRUE(top.has_value());
  EXPECT_EQ(top->minor, 55u);  // the later mount hides the earlier one
  EXPECT_FALSE(findMountAt(mounts, "/tmp/my data").has_value());
  EXPECT_FALSE(findMountAt(mounts, "/tmp/my data/mnt/").has_value());  // callers canonicalise
}

TEST(MountTableTest, TellsFuseMountsFromOthers) {
  const auto mounts = parseMountInfo(kMountInfo);
  EXPECT_FALSE(mounts[0].isFuse());
  EXPECT_FALSE(mounts[1].isFuse());
  EXPECT_TRUE(mounts[2].isFuse());
  EXPECT_TRUE(mounts[4].isFuse());  // fuseblk
  EXPECT_TRUE(parseMountInfo("1 0 0:1 / /m rw - fuse sshfs rw\n").at(0).isFuse());
  EXPECT_FALSE(parseMountInfo("1 0 0:1 / /m rw - fusectl fusectl rw\n").at(0).isFuse());
}

TEST(MountTableTest, ReadsThisProcessesMounts) {
  auto mounts = readMountInfo();
  ASSERT_TRUE(mounts.has_value()) << mounts.error().toString();
  EXPECT_TRUE(findMountAt(*mounts, "/").has_value());
}

}  // namespace
}  // namespace tierfs::fs
