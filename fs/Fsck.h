#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ProcessIdentity.h"
#include "fs/Volume.h"

// Checking and repairing a volume (docs/FSCK.md): a walk of the namespace from the root, a listing
// of every object of the store, and what follows from comparing the two. Also the recovery of
// interrupted cross-directory renames, which a mount runs at start-up.

namespace tierfs::fs {

// ---------------------------------------------------------------- rename intents

// What recovery did (or, in a dry run, would do) with one rename intent of the journal object.
struct IntentOutcome {
  enum class Action {
    kRecent,         // younger than the minimum age: a live daemon may still be renaming; left
    kRolledForward,  // the target held the moved inode: the source entry is gone now
    kRolledBack,     // the target did not: the source keeps (or kept) the inode
    kConflict,       // both entries changed since, or one does not decode: left for a person
    kUndecodable,    // the record does not decode: left for a person
    kFailed,         // a store error; the intent is kept and tried again next time
  };
  std::string key;  // the journal key (16 hex digits)
  std::optional<RenameIntent> intent;
  Action action = Action::kRecent;
  bool applied = false;  // the repair was made and the intent cleared (false in a dry run)
  std::string detail;    // what was found and done, for people
};

std::string_view actionName(IntentOutcome::Action action);

struct IntentRecoveryOptions {
  bool apply = true;        // false: only say what would be done
  std::int64_t nowSec = 0;  // the current time; 0: the system clock (tests move it forward)
  // Whether the daemon that wrote an intent (RenameIntent::owner) still runs; tests replace it.
  std::function<Liveness(std::string_view owner)> ownerLiveness = processLiveness;
};

// Finishes or undoes every cross-directory rename whose intent is older than `minAge` (a daemon
// on another node may be in the middle of a younger one), or whose daemon is known to be gone (it
// ran on this node and exited: a restart after a crash finishes its renames at once): rolled
// forward when the target entry holds the moved inode (the source entry is then removed if it still
// holds it), rolled back otherwise (the source entry still holds it, or later operations moved it
// on); then the intent is cleared. Every change is guarded on the bytes read, so a racing daemon is
// never overwritten. Returns the first store error (the other intents are still tried); `outcomes`
// gets one entry per intent.
Status recoverRenameIntents(Volume& volume, std::chrono::seconds minAge,
                            std::vector<IntentOutcome>* outcomes = nullptr,
                            const IntentRecoveryOptions& options = {});

// ---------------------------------------------------------------- fsck

struct FsckOptions {
  bool repair = false;
  // Read every referenced chunk, check its frame and that it holds as many raw bytes as the
  // chunk maps need.
  bool deep = false;
  // Orphaned chunks and directory objects, and removing marks, whose object changed more
  // recently than this are left alone: a live daemon may be about to commit or finish them.
  std::chrono::seconds minAge = std::chrono::hours(1);
  // Rename intents younger than this are left alone (a rename takes milliseconds).
  std::chrono::seconds intentMinAge = std::chrono::seconds(60);
  std::int64_t nowSec = 0;        // the current time; 0: the system clock (tests move it forward)
  std::uint32_t pageSize = 1000;  // omap entries and object names per store call
  unsigned deepReadsInFlight = 16;
};

enum class FindingKind {
  kBadVolume,          // the volume object's root entry or id allocator does not decode
  kIdAllocatorBehind,  // an id in use is not below next_id: new ids could collide
  kMissingDirObject,   // a directory entry whose d.<ino> object is missing
  kMissingChunk,       // a file's chunk map refers to a chunk object that does not exist
  kBadChunk,           // (--deep) a referenced chunk's frame does not decode
  kShortChunk,         // (--deep) a chunk holds fewer raw bytes than the chunk map needs
  kUndecodableDentry,  // a directory entry that does not decode
  kDuplicateIno,       // two entries with the same inode number
  kRemovingMark,       // a reachable directory still marked as being removed
  kOrphanChunk,        // chunk objects no file refers to
  kUnreachableDir,     // a directory object not reachable from the root
  kRenameIntent,       // an interrupted rename: an intent left in the journal object
  kUndecodableIntent,  // a rename intent that does not decode
  kForeignObject,      // an object that is not part of the volume format (never touched)
};

std::string_view kindName(FindingKind kind);

struct FsckFinding {
  enum class State {
    kFound,       // a problem repair would fix (check only) or could not fix (repair failed)
    kRepaired,    // fixed by this run
    kReportOnly,  // a problem fsck does not fix: it needs a person (data loss, undecodable data)
    kRecent,      // looks like garbage but is younger than the minimum age: left alone
    kNote,        // not a problem (a foreign object)
  };
  FindingKind kind;
  State state = State::kFound;
  std::string object;  // the object concerned
  std::string path;    // where in the namespace, when known
  std::string detail;  // what is wrong and what was done
  bool isProblem() const { return state == State::kFound || state == State::kReportOnly; }
};

std::string_view stateName(FsckFinding::State state);

struct FsckReport {
  std::vector<FsckFinding> findings;
  std::uint64_t directories = 0;  // walked: from the root, then unreachable directory objects
  std::uint64_t files = 0;
  std::uint64_t symlinks = 0;
  std::uint64_t objects = 0;           // every object the store listed
  std::uint64_t chunkObjects = 0;      // listed chunk objects
  std::uint64_t chunksReferenced = 0;  // distinct chunk objects the chunk maps refer to
  std::uint64_t chunksVerified = 0;    // (--deep) referenced chunks read and decoded
  std::uint64_t orphanChunks = 0;      // chunk objects no file refers to (recent ones included)
  std::uint64_t orphanBytes = 0;
  std::uint64_t problems() const;  // findings that are problems after this run
  std::uint64_t repaired() const;
};

// Checks the volume and, with options.repair, fixes what it safely can (docs/FSCK.md). Fails
// only when the check itself cannot go on (the store fails, the root directory cannot be read);
// what is wrong with the volume is in the report.
Result<FsckReport> checkVolume(Volume& volume, const FsckOptions& options);

}  // namespace tierfs::fs
