#pragma once

#include <compare>
#include <cstdint>
#include <vector>

#include "fs/Format.h"

namespace tierfs::fs {

// One chunk object of a file: its content version and its piece number in that version.
struct PieceId {
  std::uint64_t version = 0;
  std::uint32_t piece = 0;
  friend auto operator<=>(const PieceId&, const PieceId&) = default;
};

// Where some bytes of a file are: `length` bytes at `pieceOffset` in a piece, for the file range
// starting at `fileOffset`.
struct PieceRange {
  PieceId id;
  std::uint64_t pieceOffset = 0;
  std::uint64_t length = 0;
  std::uint64_t fileOffset = 0;
  friend bool operator==(const PieceRange&, const PieceRange&) = default;
};

// The arithmetic of a file's chunk map (a sorted list of Extents, docs/FORMAT.md) for one chunk
// size: which pieces hold a byte range, and how the map changes when a run is written over it or
// the file is truncated. Pure; thread-safe.
class ChunkMap {
 public:
  explicit ChunkMap(std::uint32_t chunkSize) : chunkSize_(chunkSize) {}

  // The pieces that hold [offset, offset + length), in file order; holes are left out.
  std::vector<PieceRange> resolve(const std::vector<Extent>& map, std::uint64_t offset,
                                  std::uint64_t length) const;

  // Puts `run` over the map: it replaces whatever the map had in its range. Neighbours that
  // continue each other's pieces are merged, so a file written front to back stays one extent.
  void overlay(std::vector<Extent>& map, const Extent& run) const;

  // Drops everything at or beyond `size`.
  static void truncate(std::vector<Extent>& map, std::uint64_t size);

  // Every piece the map refers to, sorted, each once.
  std::vector<PieceId> pieces(const std::vector<Extent>& map) const;

  std::uint32_t chunkSize() const { return chunkSize_; }

 private:
  std::uint64_t slot(std::uint64_t offset) const { return offset / chunkSize_; }
  bool continues(const Extent& a, const Extent& b) const;
  void mergeNeighbours(std::vector<Extent>& map) const;

  std::uint32_t chunkSize_;
};

}  // namespace tierfs::fs
