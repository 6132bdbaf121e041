// The config file's parser: which file is read, and errors that name the key and file:line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tools/ConfigFile.h"

namespace tierfs::tools {
namespace {

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tierfs-config-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& text) {
    const std::string file = (dir_ / "t.toml").string();
    std::ofstream(file) << text;
    return file;
  }
  std::filesystem::path dir_;
};

TEST_F(ConfigFileTest, ImplicitFileIsTheEnvironmentsThenTheDefaultWhenItExists) {
  const std::string existing = write("");
  EXPECT_EQ(implicitConfigFile("/from/env.toml", existing), "/from/env.toml");
  EXPECT_EQ(implicitConfigFile(nullptr, existing), existing);
  EXPECT_EQ(implicitConfigFile("", existing), existing);
  EXPECT_EQ(implicitConfigFile(nullptr, (dir_ / "absent.toml").string()), "");
}

TEST_F(ConfigFileTest, ProblemsNameTheKeysLineOrTheSections) {
  const std::string file = write("[fuse]\n\nthreads = 4\n");
  auto root = parseConfigFile(file);
  ASSERT_TRUE(root);
  ConfigSection fuse((*root)["fuse"].as_table(), file, "fuse");
  EXPECT_EQ(fuse.problem("threads", "is odd").message(), file + ":3: [fuse] threads is odd");
  EXPECT_EQ(fuse.where("max_read"), file + ":1");  // absent: the section's line
  ConfigSection none(nullptr, file, "cache");
  EXPECT_EQ(none.where("memory_size"), file);
}

TEST_F(ConfigFileTest, SizesTakeUnitsFractionsOrBytes) {
  const std::string file = write("[cache]\na = \"1.5T\"\nb = 4096\nc = \"4X\"\nd = -1\ne = true\n");
  auto root = parseConfigFile(file);
  ASSERT_TRUE(root);
  ConfigSection s((*root)["cache"].as_table(), file, "cache");
  std::uint64_t v = 0;
  ASSERT_TRUE(s.getSize("a", v).isOk());
  EXPECT_EQ(v, 3ull << 39);
  ASSERT_TRUE(s.getSize("b", v).isOk());
  EXPECT_EQ(v, 4096u);
  EXPECT_NE(s.getSize("c", v).message().find(file + ":4: [cache] c "), std::string::npos);
  EXPECT_NE(s.getSize("d", v).message().find(file + ":5: [cache] d must not be negative"),
            std::string::npos);
  EXPECT_NE(s.getSize("e", v).message().find(file + ":6: [cache] e must be a size"),
            std::string::npos);
}

TEST_F(ConfigFileTest, DoublesTakeIntegersToo) {
  const std::string file = write("[advisor]\na = 0.25\nb = 1\nc = \"x\"\n");
  auto root = parseConfigFile(file);
  ASSERT_TRUE(root);
  ConfigSection s((*root)["advisor"].as_table(), file, "advisor");
  double v = 0;
  ASSERT_TRUE(s.getDouble("a", v).isOk());
  EXPECT_EQ(v, 0.25);
  ASSERT_TRUE(s.getDouble("b", v).isOk());
  EXPECT_EQ(v, 1.0);
  EXPECT_NE(s.getDouble("c", v).message().find(":4: [advisor] c must be a number"),
            std::string::npos);
}

TEST_F(ConfigFileTest, NamesOrIdsTakeStringsAndNonNegativeIntegers) {
  const std::string file =
      write("[control]\na = [\"alice\", 1001]\nb = \"alice\"\nc = [-1]\nd = [true]\ne = [\"\"]\n");
  auto root = parseConfigFile(file);
  ASSERT_TRUE(root);
  ConfigSection s((*root)["control"].as_table(), file, "control");
  std::vector<std::string> v;
  ASSERT_TRUE(s.getNamesOrIds("a", v).isOk());
  EXPECT_EQ(v, (std::vector<std::string>{"alice", "1001"}));
  EXPECT_NE(s.getNamesOrIds("b", v).message().find(file + ":3: [control] b must be an array"),
            std::string::npos);
  EXPECT_NE(s.getNamesOrIds("c", v).message().find(":4: [control] c id -1 is out of range"),
            std::string::npos);
  EXPECT_NE(s.getNamesOrIds("d", v).message().find(":5: [control] d must be an array"),
            std::string::npos);
  EXPECT_NE(s.getNamesOrIds("e", v).message().find(":6: [control] e must be an array"),
            std::string::npos);
}

}  // namespace
}  // namespace tierfs::tools
