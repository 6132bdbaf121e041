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

}  // namespace tierfs::tools
