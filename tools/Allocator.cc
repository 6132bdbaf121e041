#include "tools/Allocator.h"

#include <fmt/format.h>

#ifdef TIERFS_WITH_TCMALLOC
#include <gperftools/malloc_extension_c.h>
#include <gperftools/tcmalloc.h>
#else
#include <malloc.h>
#endif

namespace tierfs::tools {

#ifdef TIERFS_WITH_TCMALLOC

namespace {

std::size_t tcmallocProperty(const char* name) {
  std::size_t value = 0;
  return MallocExtension_GetNumericProperty(name, &value) ? value : 0;
}

}  // namespace

std::string allocatorName() {
  return fmt::format("tcmalloc ({})", tc_version(nullptr, nullptr, nullptr));
}

HeapFigures heapFigures() {
  // heap_size counts pages given back to the kernel (unmapped) until tcmalloc maps them again.
  const std::size_t heap = tcmallocProperty("generic.heap_size");
  const std::size_t unmapped = tcmallocProperty("tcmalloc.pageheap_unmapped_bytes");
  return {.inUseBytes = tcmallocProperty("generic.current_allocated_bytes"),
          .heldBytes = heap > unmapped ? heap - unmapped : 0};
}

#else

std::string allocatorName() { return "glibc malloc"; }

HeapFigures heapFigures() {
  const struct mallinfo2 info = mallinfo2();
  // uordblks: in use in the arenas; hblkhd: blocks mmap()ed one by one (always in use).
  return {.inUseBytes = info.uordblks + info.hblkhd, .heldBytes = info.arena + info.hblkhd};
}

#endif

}  // namespace tierfs::tools
