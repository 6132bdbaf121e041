// The daemon's memory allocator, and what it holds: tcmalloc in a normal build (its freed memory
// is reused without new page faults, which glibc's arenas do not do for librados's 4 MiB receive
// buffers: docs/BENCHMARKS.md), glibc's malloc under the sanitizers, which bring their own.
#pragma once

#include <cstddef>
#include <string>

namespace tierfs::tools {

struct HeapFigures {
  std::size_t inUseBytes = 0;  // handed out by malloc and not yet freed
  std::size_t heldBytes = 0;   // taken from the kernel and not given back (in use, or free)
};

// "tcmalloc (gperftools 2.10)" or "glibc malloc".
std::string allocatorName();

HeapFigures heapFigures();

// Faults in `bytes` of heap now, in blocks of `blockBytes`, and frees them for reuse; returns the
// bytes so kept (0 on glibc's malloc, which gives large freed blocks back to the kernel). Why:
// librados receives each chunk into a buffer it allocates, and a fresh daemon's first cold stream
// faulted in a read-ahead window of new heap page by page (6,000-9,000 faults for 1 GiB, nearly
// all in the socket receive; 100-130 with this) and spent 20-30% more CPU a MiB than warmed
// (docs/BENCHMARKS.md, "A fresh daemon's first stream"). Call it in the process that serves
// (after daemonising: a forked child would copy every page it writes).
std::size_t warmHeap(std::size_t bytes, std::size_t blockBytes);

}  // namespace tierfs::tools
