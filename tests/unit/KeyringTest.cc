// The cephx keyring's mode check (backends/Keyring.h), and printable(): how hostile names are
// shown in messages (common/FileUtil.h).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "backends/Keyring.h"
#include "common/FileUtil.h"
#include "tests/support/Assertions.h"
#include "tests/support/TempDir.h"

namespace tierfs::testing {
namespace {

class KeyringTest : public ::testing::Test {
 protected:
  std::string keyring(mode_t mode) {
    const std::string path = (dir_.path() / "client.x.keyring").string();
    std::ofstream(path) << "[client.x]\n\tkey = AQBsecretsecretsecret==\n";
    EXPECT_EQ(::chmod(path.c_str(), mode), 0);
    return path;
  }
  TempDir dir_;
};

TEST_F(KeyringTest, OnlyAnOwnerOnlyKeyringPasses) {
  EXPECT_OK(backends::checkKeyringMode(keyring(0600), false));
  EXPECT_OK(backends::checkKeyringMode(keyring(0400), false));
  EXPECT_OK(backends::checkKeyringMode(keyring(0711), false));  // execute bits leak nothing
  EXPECT_OK(backends::checkKeyringMode((dir_.path() / "absent").string(), false));
}

TEST_F(KeyringTest, AKeyringOthersMayReadOrWriteIsRefusedWithWhatToDo) {
  const std::string path = keyring(0644);
  Status s = backends::checkKeyringMode(path, false);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "keyring " + path +
                             " is readable by other users (mode 0644): chmod 600 it, or pass "
                             "--allow-open-keyring ([backend.rados] allow_open_keyring = true)");
  EXPECT_NE(backends::checkKeyringMode(keyring(0640), false)
                .message()
                .find("is readable by its group (mode 0640)"),
            std::string::npos);
  EXPECT_NE(backends::checkKeyringMode(keyring(0602), false)
                .message()
                .find("is writable by other users (mode 0602)"),
            std::string::npos);
  EXPECT_OK(backends::checkKeyringMode(keyring(0644), /*allowOpen=*/true));
  // No message ever carries the key.
  EXPECT_EQ(s.message().find("AQB"), std::string::npos);
}

TEST_F(KeyringTest, AListIsJudgedByTheFirstFileThatExists) {
  const std::string open = keyring(0644);
  const std::string absent = (dir_.path() / "absent").string();
  EXPECT_FALSE(backends::checkKeyringList(absent + "," + open, false).isOk());
  EXPECT_OK(backends::checkKeyringList(absent + ", " + absent, false));
  ASSERT_EQ(::chmod(open.c_str(), 0600), 0);
  EXPECT_OK(backends::checkKeyringList(absent + ";" + open, false));
}

TEST(Printable, EscapesControlCharactersBackslashesAndInvalidUtf8Only) {
  EXPECT_EQ(printable("plain/name.txt"), "plain/name.txt");
  EXPECT_EQ(printable("été 日本 🙂"), "été 日本 🙂");
  EXPECT_EQ(printable("a\nb\tc\rd\\e"), "a\\nb\\tc\\rd\\\\e");
  EXPECT_EQ(printable("\x1b[31mred\x7f"), "\\x1b[31mred\\x7f");
  EXPECT_EQ(printable(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(printable("bad\xff\xfe"), "bad\\xff\\xfe");
  EXPECT_EQ(printable("\xc3"), "\\xc3");                             // truncated
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                    // over-long '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // beyond U+10FFFF
}

}  // namespace
}  // namespace tierfs::testing
