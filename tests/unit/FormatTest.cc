#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cache/ChunkCodec.h"
#include "common/Encoding.h"
#include "fs/Format.h"
#include "tests/support/Assertions.h"
#include "tests/support/FormatSamples.h"

namespace tierfs::fs {
namespace {

using tierfs::testing::bodyOf;
using tierfs::testing::sampleDir;
using tierfs::testing::sampleFile;
using tierfs::testing::sampleIntent;
using tierfs::testing::sampleSymlink;
using tierfs::testing::sampleVolume;
using tierfs::testing::seal;

constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint32_t kMax32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::int64_t kMinI64 = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxI64 = std::numeric_limits<std::int64_t>::max();

// Expects Corruption whose message contains `what` (a field name where the decoder gives one).
template <typename T>
void expectCorruption(const Result<T>& r, std::string_view what) {
  ASSERT_FALSE(r) << "decoded a record that should be rejected for: " << what;
  EXPECT_EQ(r.error().code(), StatusCode::kCorruption) << r.error().toString();
  EXPECT_NE(r.error().message().find(what), std::string::npos)
      << "message '" << r.error().message() << "' does not mention '" << what << "'";
}

std::string allByteValues() {
  std::string s;
  for (int i = 0; i < 256; ++i) s.push_back(static_cast<char>(i));
  return s;
}

// ---------------------------------------------------------------------------------------------
// Round trips

void expectVolumeRoundTrip(const VolumeRecord& v) {
  const std::string bytes = encodeVolume(v);
  auto back = decodeVolume(bytes);
  ASSERT_OK(back);
  EXPECT_EQ(*back, v);
  EXPECT_EQ(encodeVolume(*back), bytes);
}

void expectInodeRoundTrip(const Inode& n) {
  const std::string bytes = encodeInode(n);
  auto back = decodeInode(bytes);
  ASSERT_OK(back);
  EXPECT_TRUE(*back == n);  // not EXPECT_EQ: an Inode does not print
  EXPECT_EQ(encodeInode(*back), bytes);
}

void expectIntentRoundTrip(const RenameIntent& r) {
  const std::string bytes = encodeIntent(r);
  auto back = decodeIntent(bytes);
  ASSERT_OK(back);
  EXPECT_TRUE(*back == r);
  EXPECT_EQ(encodeIntent(*back), bytes);
}

TEST(FormatTest, VolumeRoundTripsWithEdgeValues) {
  expectVolumeRoundTrip(VolumeRecord{});
  expectVolumeRoundTrip(sampleVolume());
  VolumeRecord v = sampleVolume();
  v.uuid.fill(0xff);
  v.chunkSize = kMinChunkSize;
  v.codec = cache::Codec::kNone;
  v.zstdLevel = -7;
  v.createdSec = kMinI64;
  expectVolumeRoundTrip(v);
  v.uuid.fill(0);
  v.chunkSize = static_cast<std::uint32_t>(cache::kMaxChunkSize);
  v.codec = cache::Codec::kZstd;
  v.zstdLevel = 22;
  v.createdSec = kMaxI64;
  expectVolumeRoundTrip(v);
  v.createdSec = -1;
  expectVolumeRoundTrip(v);
}

TEST(FormatTest, VolumeRecordStartsWithMagicAndVersion) {
  const std::string bytes = encodeVolume(sampleVolume());
  EXPECT_EQ(bytes.substr(0, 8), "TFVOLUME");
  EXPECT_EQ(bytes[8], 1);
  EXPECT_EQ(sampleVolume().uuidString(), "00112233-4455-6677-8899-aabbccddeeff");
}

TEST(FormatTest, InodeRoundTripsWithEdgeValues) {
  expectInodeRoundTrip(sampleFile());
  expectInodeRoundTrip(sampleDir());
  expectInodeRoundTrip(sampleSymlink());

  Inode n;
  n.ino = kMax64;
  n.mode = 07777;
  n.uid = kMax32;
  n.gid = kMax32;
  n.size = kMax64;
  n.atime = {kMinI64, 999'999'999};
  n.mtime = {kMaxI64, 999'999'999};
  n.ctime = {-2'208'988'800, 0};  // 1900-01-01
  n.version = kMax64;
  // One extent ending exactly at 2^64 - 1, with the largest piece number and an origin far back.
  n.extents = {{kMax64 - 10, 10, kMax64, kMax32, 0}};
  expectInodeRoundTrip(n);

  n.mode = 0;
  n.uid = n.gid = 0;
  n.atime = {-1, 0};
  n.mtime = {-1, 999'999'999};
  n.ctime = {0, 1};
  n.extents.clear();
  n.size = 0;
  n.version = 0;
  expectInodeRoundTrip(n);  // an empty file with an empty symlink target field
}

TEST(FormatTest, InodeRoundTripsWithManyExtents) {
  Inode n = sampleFile();
  n.extents.clear();
  std::uint64_t at = 0;
  for (std::uint32_t i = 0; i < 20'000; ++i) {
    const std::uint64_t length = 1 + (i * 7919u) % 70'000;
    n.extents.push_back({at, length, 1 + i % 13, i, at - (i % 3) * std::min<std::uint64_t>(at, 5)});
    at += length + (i % 5 == 0 ? 4096 : 0);  // some holes
  }
  n.size = at + 1;
  expectInodeRoundTrip(n);
  n.size = n.extents.back().end();  // data up to the very end
  expectInodeRoundTrip(n);
}

TEST(FormatTest, InodeRoundTripsWithBinaryAndLargeXattrs) {
  Inode n = sampleFile();
  n.xattrs = {
      {"user.binary", allByteValues()},
      {"user.empty", ""},
      {"user.largest", std::string(kMaxXattrValue, '\xa5')},
      {"user.nul", std::string(3, '\0')},
      {std::string("user.") + std::string(kMaxNameLength - 5, 'n'), "long name"},
      {std::string("user.\xff\x01", 7), "binary name"},
  };
  expectInodeRoundTrip(n);
}

TEST(FormatTest, SymlinkTargetsFromOneByteToPathMax) {
  Inode n = sampleSymlink();
  for (std::size_t length :
       {std::size_t{1}, std::size_t{127}, std::size_t{128}, kMaxSymlinkLength}) {
    n.symlinkTarget = std::string(length, 'p');
    n.size = length;
    expectInodeRoundTrip(n);
  }
  // The other types carry an empty target.
  Inode file = sampleFile();
  ASSERT_TRUE(file.symlinkTarget.empty());
  expectInodeRoundTrip(file);
}

TEST(FormatTest, IntentRoundTrips) {
  expectIntentRoundTrip(sampleIntent());
  RenameIntent r = sampleIntent();
  r.replaced.clear();  // nothing replaced at the destination
  r.srcDir = kMax64;
  r.dstDir = kMax64;
  r.srcName = std::string(kMaxNameLength, 's');
  r.dstName = std::string("\xff\x01 x", 4);
  r.createdSec = kMinI64;
  expectIntentRoundTrip(r);
  r.moved = encodeInode(sampleDir());
  r.createdSec = kMaxI64;
  expectIntentRoundTrip(r);
  r.owner.clear();  // intents written before the owner field end after createdSec
  expectIntentRoundTrip(r);
}

TEST(FormatTest, DirObjectNamesAreHex) {
  EXPECT_EQ(dirObject(1), "d.1");
  EXPECT_EQ(dirObject(0xabcdef), "d.abcdef");
  EXPECT_EQ(dirObject(kMax64), "d.ffffffffffffffff");
}

// ---------------------------------------------------------------------------------------------
// What every record must reject: version, checksum, truncation, trailing bytes

struct Sealed {
  std::string name;
  std::string bytes;
  std::size_t versionAt;  // offset of the version byte
  std::function<Status(std::string_view)> decode;
  // A body cut here is a whole record of an older shape (an optional last field starts here).
  std::size_t optionalFrom = std::string::npos;
};

std::vector<Sealed> sealedSamples() {
  auto volume = [](std::string_view b) { return statusOf(decodeVolume(b)); };
  auto inode = [](std::string_view b) { return statusOf(decodeInode(b)); };
  auto intent = [](std::string_view b) { return statusOf(decodeIntent(b)); };
  RenameIntent noReplaced = sampleIntent();
  noReplaced.replaced.clear();
  // Where the intent's optional owner begins: the body length of the same intent without it.
  auto ownerAt = [](RenameIntent r) {
    r.owner.clear();
    return bodyOf(encodeIntent(r)).size();
  };
  return {
      {"volume", encodeVolume(sampleVolume()), 8, volume},
      {"file", encodeInode(sampleFile()), 0, inode},
      {"dir", encodeInode(sampleDir()), 0, inode},
      {"symlink", encodeInode(sampleSymlink()), 0, inode},
      {"intent", encodeIntent(sampleIntent()), 0, intent, ownerAt(sampleIntent())},
      {"intent without replaced", encodeIntent(noReplaced), 0, intent, ownerAt(noReplaced)},
  };
}

void expectStatus(const Status& s, std::string_view what, const std::string& record) {
  ASSERT_FALSE(s.isOk()) << record << ": accepted; wanted '" << what << "'";
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << record << ": " << s.toString();
  EXPECT_NE(s.message().find(what), std::string::npos)
      << record << ": message '" << s.message() << "' does not mention '" << what << "'";
}

TEST(FormatTest, SamplesDecode) {
  for (const Sealed& s : sealedSamples()) EXPECT_OK(s.decode(s.bytes)) << s.name;
}

TEST(FormatTest, RejectsOtherVersions) {
  for (const Sealed& s : sealedSamples()) {
    for (int version : {0, 2, 255}) {
      std::string body(bodyOf(s.bytes));
      ASSERT_EQ(body[s.versionAt], 1) << s.name;
      body[s.versionAt] = static_cast<char>(version);
      expectStatus(s.decode(seal(body)), "unsupported record version " + std::to_string(version),
                   s.name);
    }
  }
}

TEST(FormatTest, RejectsABadChecksum) {
  for (const Sealed& s : sealedSamples()) {
    for (std::size_t at : {std::size_t{0}, s.bytes.size() / 2, s.bytes.size() - 5,
                           s.bytes.size() - 4, s.bytes.size() - 1}) {
      std::string damaged = s.bytes;
      damaged[at] ^= 0x10;
      expectStatus(s.decode(damaged), "checksum mismatch", s.name);
    }
  }
}

TEST(FormatTest, RejectsEveryTruncation) {
  for (const Sealed& s : sealedSamples()) {
    // As read: a short object.
    for (std::size_t n = 0; n < s.bytes.size(); ++n) {
      expectStatus(s.decode(std::string_view(s.bytes).substr(0, n)), "", s.name);
    }
    // As written short: the checksum matches, so the fields must catch it.
    const std::string_view body = bodyOf(s.bytes);
    for (std::size_t n = 0; n < body.size(); ++n) {
      const Status st = s.decode(seal(body.substr(0, n)));
      if (n == s.optionalFrom) {
        EXPECT_OK(st) << s.name << ": without its optional last field";
        continue;
      }
      expectStatus(st, "", s.name + " body of " + std::to_string(n) + " bytes");
    }
  }
}

TEST(FormatTest, RejectsTrailingBytes) {
  for (const Sealed& s : sealedSamples()) {
    expectStatus(s.decode(s.bytes + 'x'), "checksum mismatch", s.name);
    for (const std::string& extra : {std::string(1, '\0'), std::string("abc"), s.bytes}) {
      expectStatus(s.decode(seal(std::string(bodyOf(s.bytes)) + extra)),
                   "unexpected bytes after the last field", s.name);
    }
  }
}

TEST(FormatTest, RejectsTooShortForAChecksum) {
  for (std::string_view in : {std::string_view(""), std::string_view("\x01\x02\x03\x04", 4)}) {
    expectCorruption(decodeVolume(in), "volume record: truncated");
    expectCorruption(decodeInode(in), "inode record: truncated");
    expectCorruption(decodeIntent(in), "rename intent: truncated");
  }
}

// ---------------------------------------------------------------------------------------------
// Volume record fields

TEST(FormatTest, VolumeRejectsBadMagic) {
  std::string body(bodyOf(encodeVolume(sampleVolume())));
  body[0] = 'X';
  expectCorruption(decodeVolume(seal(body)), "field 'magic'");
  // An inode is not a volume record.
  expectCorruption(decodeVolume(encodeInode(sampleFile())), "volume record");
}

TEST(FormatTest, VolumeRejectsChunkSizeOutOfRange) {
  for (std::uint64_t size : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{kMinChunkSize - 1},
                             std::uint64_t{cache::kMaxChunkSize + 1}, std::uint64_t{kMax32}}) {
    VolumeRecord v = sampleVolume();
    v.chunkSize = static_cast<std::uint32_t>(size);
    expectCorruption(decodeVolume(encodeVolume(v)), "field 'chunk size'");
  }
  // Over 32 bits: hand-encoded, as VolumeRecord cannot hold it.
  Encoder e;
  e.putRaw("TFVOLUME");
  e.putU8(1);
  e.putRaw(std::string(16, '\0'));
  e.putVarint(std::uint64_t{1} << 32);
  e.putU8(1);
  e.putSigned(1);
  e.putSigned(0);
  expectCorruption(decodeVolume(seal(e.bytes())), "field 'chunk size'");
}

TEST(FormatTest, VolumeRejectsUnknownCodecAndLevelsOutOfRange) {
  VolumeRecord v = sampleVolume();
  v.codec = static_cast<cache::Codec>(2);
  expectCorruption(decodeVolume(encodeVolume(v)), "field 'codec'");
  v.codec = static_cast<cache::Codec>(255);
  expectCorruption(decodeVolume(encodeVolume(v)), "field 'codec'");
  for (std::int32_t level : {-8, 23, std::numeric_limits<std::int32_t>::min(),
                             std::numeric_limits<std::int32_t>::max()}) {
    v = sampleVolume();
    v.zstdLevel = level;
    expectCorruption(decodeVolume(encodeVolume(v)), "field 'zstd level'");
  }
}

// ---------------------------------------------------------------------------------------------
// Inode fields

TEST(FormatTest, InodeRejectsUnknownType) {
  for (int type : {0, 4, 255}) {
    Inode n = sampleDir();
    n.type = static_cast<FileType>(type);
    expectCorruption(decodeInode(encodeInode(n)), "field 'type'");
  }
}

TEST(FormatTest, InodeRejectsInoZero) {
  Inode n = sampleFile();
  n.ino = 0;
  expectCorruption(decodeInode(encodeInode(n)), "field 'ino'");
}

TEST(FormatTest, InodeRejectsModeBitsAbove07777) {
  for (std::uint32_t mode : {010000u, 0100644u, 0170000u, kMax32}) {
    Inode n = sampleFile();
    n.mode = mode;
    expectCorruption(decodeInode(encodeInode(n)), "field 'mode'");
  }
}

TEST(FormatTest, InodeRejectsNanosecondsOfASecondOrMore) {
  for (std::uint32_t nsec : {1'000'000'000u, kMax32}) {
    Inode n = sampleFile();
    n.atime.nsec = nsec;
    expectCorruption(decodeInode(encodeInode(n)), "field 'atime'");
    n = sampleFile();
    n.mtime.nsec = nsec;
    expectCorruption(decodeInode(encodeInode(n)), "field 'mtime'");
    n = sampleFile();
    n.ctime.nsec = nsec;
    expectCorruption(decodeInode(encodeInode(n)), "field 'ctime'");
  }
}

TEST(FormatTest, InodeRejectsBadExtents) {
  const std::vector<std::vector<Extent>> bad = {
      {{0, 0, 1, 0, 0}},                         // zero length
      {{10, 0, 1, 0, 10}},                       // zero length
      {{0, 100, 1, 0, 0}, {50, 100, 1, 1, 50}},  // overlapping
      {{0, 100, 1, 0, 0}, {99, 1, 1, 1, 99}},    // overlapping by one byte
      {{200, 10, 1, 0, 200}, {0, 10, 1, 1, 0}},  // unsorted
      {{0, 10, 1, 0, 0}, {0, 10, 1, 0, 0}},      // repeated
      {{0, 300'001, 1, 0, 0}},                   // past the size (sampleFile: 300000)
      {{299'999, 2, 1, 0, 299'999}},             // one byte past the size
      {{300'000, 1, 1, 0, 300'000}},             // starting at the size
      {{10, 5, 1, 0, 11}},                       // origin after the offset
      {{kMax64, 1, 1, 0, kMax64}},               // end overflows
      {{kMax64 - 10, 20, 1, 0, kMax64 - 10}},    // end overflows
  };
  for (const auto& extents : bad) {
    Inode n = sampleFile();
    n.extents = extents;
    expectCorruption(decodeInode(encodeInode(n)), "field 'extents'");
  }
  // The boundary cases that are fine.
  Inode n = sampleFile();
  n.extents = {{0, 100, 1, 0, 0}, {100, 1, 1, 1, 100}, {299'999, 1, 2, 0, 0}};
  expectInodeRoundTrip(n);
}

TEST(FormatTest, InodeRejectsExtentCountsBeyondTheInput) {
  // The count is checked before anything is allocated for it.
  Inode n = sampleFile();
  n.extents.clear();
  n.xattrs.clear();
  std::string body(bodyOf(encodeInode(n)));
  ASSERT_EQ(body.substr(body.size() - 2), std::string(2, '\0'));  // extent count, xattr count
  body.resize(body.size() - 2);
  Encoder e;
  e.putVarint(kMax64);
  expectCorruption(decodeInode(seal(body + e.bytes() + std::string(2, '\0'))), "field 'extents'");
}

TEST(FormatTest, InodeRejectsMoreThanAMillionExtents) {
  // A count of (1 << 20) + 1 followed by more bytes than that: the bound on the count, not the
  // bound by the remaining input, must reject it.
  Inode n = sampleFile();
  n.extents.clear();
  n.xattrs.clear();
  std::string body(bodyOf(encodeInode(n)));
  body.resize(body.size() - 2);  // extent count, xattr count
  Encoder e;
  e.putVarint((1u << 20) + 1);
  expectCorruption(decodeInode(seal(body + e.bytes() + std::string((1u << 20) + 10, '\x01'))),
                   "field 'extents': too many");
}

TEST(FormatTest, OnlyFilesHaveExtents) {
  for (Inode n : {sampleDir(), sampleSymlink()}) {
    n.size = 1000;
    if (n.isSymlink()) n.symlinkTarget = std::string(1000, 't');
    n.extents = {{0, 10, 1, 0, 0}};
    expectCorruption(decodeInode(encodeInode(n)), "field 'extents'");
  }
}

TEST(FormatTest, SymlinkTargetMustMatchTheSizeAndOnlySymlinksHaveOne) {
  Inode n = sampleSymlink();
  n.size = n.symlinkTarget.size() + 1;
  expectCorruption(decodeInode(encodeInode(n)), "field 'symlink'");
  n.size = n.symlinkTarget.size() - 1;
  expectCorruption(decodeInode(encodeInode(n)), "field 'symlink'");
  n.symlinkTarget.clear();
  n.size = 0;
  expectCorruption(decodeInode(encodeInode(n)), "field 'symlink'");  // empty target
  n.symlinkTarget = std::string(kMaxSymlinkLength + 1, 't');
  n.size = n.symlinkTarget.size();
  expectCorruption(decodeInode(encodeInode(n)), "field 'symlink': longer than allowed");

  for (Inode other : {sampleFile(), sampleDir()}) {
    other.symlinkTarget = "x";
    expectCorruption(decodeInode(encodeInode(other)), "field 'symlink'");
  }
}

// The encoding of `n` with its xattrs (the last field) replaced by `xattrs`.
std::string withXattrBytes(Inode n, std::string_view xattrs) {
  n.xattrs.clear();
  std::string body(bodyOf(encodeInode(n)));
  body.pop_back();  // the xattr count 0
  return seal(body + std::string(xattrs));
}

TEST(FormatTest, InodeRejectsBadXattrs) {
  auto entries = [](std::initializer_list<std::pair<std::string, std::string>> xs,
                    std::uint64_t count) {
    Encoder e;
    e.putVarint(count);
    for (const auto& [name, value] : xs) {
      e.putString(name);
      e.putString(value);
    }
    return e.take();
  };
  // The helper itself encodes what encodeInode does.
  EXPECT_OK(decodeInode(withXattrBytes(sampleFile(), entries({{"user.a", "1"}}, 1))));

  expectCorruption(decodeInode(withXattrBytes(sampleFile(), entries({{"", "1"}}, 1))),
                   "field 'xattrs'");
  expectCorruption(
      decodeInode(withXattrBytes(sampleFile(), entries({{"user.a", "1"}, {"user.a", "2"}}, 2))),
      "field 'xattrs'");
  // Names in ascending byte order, as encodeInode writes them: any other order is a second
  // encoding of the same inode.
  expectCorruption(
      decodeInode(withXattrBytes(sampleFile(), entries({{"user.b", "1"}, {"user.a", "2"}}, 2))),
      "field 'xattrs': names repeated or not in ascending order");
  expectCorruption(
      decodeInode(withXattrBytes(sampleFile(), entries({{"user.\xff", "1"}, {"user.a", "2"}}, 2))),
      "field 'xattrs'");
  expectCorruption(
      decodeInode(withXattrBytes(sampleFile(), entries({{"a", ""}, {"c", ""}, {"b", ""}}, 3))),
      "field 'xattrs'");
  EXPECT_OK(
      decodeInode(withXattrBytes(sampleFile(), entries({{"user.a", "2"}, {"user.\xff", "1"}}, 2))));
  EXPECT_OK(decodeInode(withXattrBytes(sampleFile(), entries({{"a", ""}, {"ab", ""}}, 2))));
  expectCorruption(decodeInode(withXattrBytes(
                       sampleFile(), entries({{std::string(kMaxNameLength + 1, 'n'), ""}}, 1))),
                   "field 'xattr name'");
  expectCorruption(
      decodeInode(withXattrBytes(sampleFile(),
                                 entries({{"user.a", std::string(kMaxXattrValue + 1, 'v')}}, 1))),
      "field 'xattr value'");
  expectCorruption(decodeInode(withXattrBytes(sampleFile(), entries({{"user.a", "1"}}, 2))),
                   "field 'xattr name'");
  expectCorruption(decodeInode(withXattrBytes(sampleFile(), entries({}, kMax64))),
                   "field 'xattrs': too many");
  // More than 4096 names, with the bytes for them present.
  Encoder e;
  e.putVarint(4097);
  for (int i = 0; i < 4097; ++i) {
    e.putString(std::to_string(100000 + i));
    e.putString("");
  }
  expectCorruption(decodeInode(withXattrBytes(sampleFile(), e.bytes())),
                   "field 'xattrs': too many");
}

// ---------------------------------------------------------------------------------------------
// Rename intent fields

TEST(FormatTest, IntentRejectsInvalidNames) {
  for (const std::string& name : {std::string(""), std::string("."), std::string(".."),
                                  std::string("a/b"), std::string("/"), std::string("a\0b", 3)}) {
    RenameIntent r = sampleIntent();
    r.srcName = name;
    expectCorruption(decodeIntent(encodeIntent(r)), "field 'names'");
    r = sampleIntent();
    r.dstName = name;
    expectCorruption(decodeIntent(encodeIntent(r)), "field 'names'");
  }
  RenameIntent r = sampleIntent();
  r.srcName = std::string(kMaxNameLength + 1, 'n');
  expectCorruption(decodeIntent(encodeIntent(r)), "field 'source name'");
  r = sampleIntent();
  r.dstName = std::string(kMaxNameLength + 1, 'n');
  expectCorruption(decodeIntent(encodeIntent(r)), "field 'target name'");
}

TEST(FormatTest, IntentRejectsUndecodableEmbeddedInodes) {
  Inode badMode = sampleFile();
  badMode.mode = 0100644;
  std::string damaged = encodeInode(sampleFile());
  damaged[3] ^= 1;
  for (const std::string& inode : {std::string(), std::string("garbage"), encodeInode(badMode),
                                   damaged, encodeVolume(sampleVolume())}) {
    RenameIntent r = sampleIntent();
    r.moved = inode;
    expectCorruption(decodeIntent(encodeIntent(r)), "rename intent: inode record");
    if (inode.empty()) continue;  // an empty `replaced` means none
    r = sampleIntent();
    r.replaced = inode;
    expectCorruption(decodeIntent(encodeIntent(r)), "rename intent: inode record");
  }
  RenameIntent r = sampleIntent();
  r.moved = encodeInode(badMode);
  expectCorruption(decodeIntent(encodeIntent(r)), "field 'mode'");
}

// ---------------------------------------------------------------------------------------------
// checkName

TEST(FormatTest, CheckNameAcceptsWhatADentryMayBeCalled) {
  for (const std::string& name :
       {std::string("a"), std::string("..."), std::string(".a"), std::string("a."),
        std::string(" "), std::string("\xff\x01"), std::string(kMaxNameLength, 'x')}) {
    EXPECT_OK(checkName(name)) << "'" << name << "'";
  }
}

TEST(FormatTest, CheckNameRejectsTheRest) {
  for (const std::string& name :
       {std::string(""), std::string("."), std::string(".."), std::string("a/b"), std::string("/"),
        std::string("a/"), std::string(1, '\0'), std::string("a\0b", 3)}) {
    const Status s = checkName(name);
    EXPECT_FALSE(s.isOk()) << "'" << name << "'";
    EXPECT_EQ(s.toErrno(), EINVAL) << "'" << name << "': " << s.toString();
  }
  const Status tooLong = checkName(std::string(kMaxNameLength + 1, 'x'));
  EXPECT_FALSE(tooLong.isOk());
  EXPECT_EQ(tooLong.toErrno(), ENAMETOOLONG) << tooLong.toString();
}

}  // namespace
}  // namespace tierfs::fs
