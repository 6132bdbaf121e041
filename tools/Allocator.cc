#include "tools/Allocator.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#ifdef TIERFS_WITH_TCMALLOC
#include <gperftools/malloc_extension.h>
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

std::size_t warmHeap(std::size_t bytes, std::size_t blockBytes) {
  if (blockBytes == 0) return 0;
  // tcmalloc hands freed pages back to the kernel a span at a time, the first time soon after
  // start: with its release rate at 0 while these blocks are freed, it keeps them all.
  MallocExtension* tcmalloc = MallocExtension::instance();
  const double rate = tcmalloc->GetMemoryReleaseRate();
  tcmalloc->SetMemoryReleaseRate(0);
  std::vector<void*> blocks;
  for (std::size_t done = 0; done < bytes; done += blockBytes) {
    void* block = std::malloc(blockBytes);
    if (block == nullptr) break;
    std::memset(block, 0, blockBytes);
    blocks.push_back(block);
  }
  for (void* block : blocks) std::free(block);
  tcmalloc->SetMemoryReleaseRate(rate);
  return blocks.size() * blockBytes;
}

#else

std::string allocatorName() { return "glibc malloc"; }

std::size_t warmHeap(std::size_t, std::size_t) { return 0; }

HeapFigures heapFigures() {
  const struct mallinfo2 info = mallinfo2();
  // uordblks: in use in the arenas; hblkhd: blocks mmap()ed one by one (always in use).
  return {.inUseBytes = info.uordblks + info.hblkhd, .heldBytes = info.arena + info.hblkhd};
}

#endif

}  // namespace tierfs::tools
