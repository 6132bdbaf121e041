#include "fs/ChunkMap.h"

#include <algorithm>

namespace tierfs::fs {

std::vector<PieceRange> ChunkMap::resolve(const std::vector<Extent>& map, std::uint64_t offset,
                                          std::uint64_t length) const {
  std::vector<PieceRange> out;
  const std::uint64_t end = offset + length;
  auto it = std::upper_bound(map.begin(), map.end(), offset,
                             [](std::uint64_t off, const Extent& x) { return off < x.end(); });
  for (; it != map.end() && it->offset < end; ++it) {
    std::uint64_t p = std::max(offset, it->offset);
    const std::uint64_t stop = std::min(end, it->end());
    while (p < stop) {
      const std::uint64_t s = slot(p);
      const std::uint64_t q = std::min(stop, (s + 1) * chunkSize_);
      const std::uint64_t pieceStart = std::max(it->origin, s * chunkSize_);
      const auto piece = static_cast<std::uint32_t>(it->firstPiece + (s - slot(it->origin)));
      out.push_back({{it->version, piece}, p - pieceStart, q - p, p});
      p = q;
    }
  }
  return out;
}

void ChunkMap::overlay(std::vector<Extent>& map, const Extent& run) const {
  if (run.length == 0) return;  // nothing written; an empty extent is not a valid map entry
  std::vector<Extent> out;
  out.reserve(map.size() + 2);
  bool placed = false;
  for (const Extent& x : map) {
    if (x.end() <= run.offset) {
      out.push_back(x);
      continue;
    }
    if (x.offset < run.offset) {  // the part of x before the run
      Extent left = x;
      left.length = run.offset - x.offset;
      out.push_back(left);
    }
    if (!placed) {
      out.push_back(run);
      placed = true;
    }
    if (x.end() > run.end()) {  // the part of x after the run
      Extent right = x;
      right.offset = std::max(x.offset, run.end());
      right.length = x.end() - right.offset;
      out.push_back(right);
    }
  }
  if (!placed) out.push_back(run);
  mergeNeighbours(out);
  map = std::move(out);
}

void ChunkMap::truncate(std::vector<Extent>& map, std::uint64_t size) {
  while (!map.empty() && map.back().offset >= size) map.pop_back();
  if (!map.empty() && map.back().end() > size) map.back().length = size - map.back().offset;
}

std::vector<PieceId> ChunkMap::pieces(const std::vector<Extent>& map) const {
  std::vector<PieceId> out;
  for (const Extent& x : map) {
    for (std::uint64_t s = slot(x.offset); s <= slot(x.end() - 1); ++s) {
      out.push_back({x.version, static_cast<std::uint32_t>(x.firstPiece + (s - slot(x.origin)))});
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// True when every byte of b maps to the same piece and piece offset under a's layout as under its
// own, so that a can simply grow over b.
bool ChunkMap::continues(const Extent& a, const Extent& b) const {
  if (a.end() != b.offset || a.version != b.version) return false;
  if (a.origin == b.origin) return a.firstPiece == b.firstPiece;
  return b.origin % chunkSize_ == 0 && b.origin >= a.origin &&
         b.firstPiece == a.firstPiece + (slot(b.origin) - slot(a.origin));
}

void ChunkMap::mergeNeighbours(std::vector<Extent>& map) const {
  std::vector<Extent> out;
  out.reserve(map.size());
  for (const Extent& x : map) {
    if (!out.empty() && continues(out.back(), x)) {
      out.back().length += x.length;
    } else {
      out.push_back(x);
    }
  }
  map = std::move(out);
}

}  // namespace tierfs::fs
