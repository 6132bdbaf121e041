#pragma once

#include <rocksdb/options.h>

namespace tierfs {

// The leader of a RocksDB write group copies the other writers' batches into its own, handed over
// inside librocksdb, which is not built with TSan: TSan cannot see the hand-off and reports the
// copy as a race with the thread that built the batch (whenever the string code doing the copy is
// an instrumented copy in our binary, so that tests/tsan.supp cannot tell it is librocksdb's).
// In TSan builds (TIERFS_UNDER_TSAN) every write is therefore a group of its own; elsewhere this
// changes nothing.
inline void writeGroupsTsanCanFollow(rocksdb::DBOptions& options) {
#ifdef TIERFS_UNDER_TSAN
  options.max_write_batch_group_size_bytes = 1;
#else
  (void)options;
#endif
}

}  // namespace tierfs
