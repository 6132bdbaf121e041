// Filesystem: new files written whole before they have a name (tierfs import).
#include <fmt/format.h>

#include <set>

#include "fs/Filesystem.h"

namespace tierfs::fs {

Result<std::unique_ptr<NewFile>> Filesystem::stageFile(Ino parent, std::uint32_t mode, Caller who) {
  TIERFS_RETURN_IF_ERROR(checkWritable());
  auto file = std::make_unique<NewFile>();
  TIERFS_ASSIGN_OR_RETURN(file->inode, newInode(parent, FileType::kRegular, mode, who));
  file->writer = std::make_shared<FileWriter>(writerContext(), file->inode);
  return file;
}

Status Filesystem::writeNew(NewFile& file, std::uint64_t offset, std::string_view data) {
  if (file.published) return Status::posix(EBADF, "the file is published: open it to write");
  return file.writer->write(offset, data);
}

Result<Inode> Filesystem::publish(NewFile& file, Ino parent, std::string_view name,
                                  const NewFileAttrs& attrs) {
  if (file.published) return failure(Status::posix(EINVAL, "the file is published already"));
  TIERFS_RETURN_IF_ERROR(checkWritable());
  TIERFS_RETURN_IF_ERROR(checkName(name));
  TIERFS_RETURN_IF_ERROR(file.writer->drain());
  Inode inode = file.inode;
  FileWriter::replay(reader_.chunkMap(), file.writer->changes().ops, inode);
  TIERFS_ASSIGN_OR_RETURN(inode.version, volume_.newId());
  applyAttrs(inode, attrs.set);
  if (!attrs.set.setMtime) inode.mtime = inode.ctime;  // its last write is now
  for (const auto& [key, value] : attrs.xattrs) {
    TIERFS_RETURN_IF_ERROR(putXattr(inode, key, value, 0));
  }
  Publication mine{std::string(name), std::move(inode), std::nullopt};
  TIERFS_ASSIGN_OR_RETURN(Inode added, publishInOrder(parent, mine));
  file.published = true;
  file.storedBytes = file.writer->uploadedStoredBytes();  // written once each: no chunk replaced
  file.writer.reset();  // everything is committed: the node writes through a writer of its own
  return added;
}

// Joins the directory's queue; the first in it while no update is under way makes the update
// for everyone waiting, then hands the turn on.
Result<Inode> Filesystem::publishInOrder(Ino parent, Publication& mine) {
  std::unique_lock lock(publishMu_);
  PublishQueue& queue = publishing_[parent];  // stays while anyone waits in it or publishes
  queue.waiting.push_back(&mine);
  while (!mine.result) {
    if (queue.busy) {
      publishDone_.wait(lock);
      continue;
    }
    queue.busy = true;
    std::vector<Publication*> batch;
    batch.swap(queue.waiting);
    lock.unlock();
    std::vector<Result<Inode>> results = publishBatch(parent, batch);
    lock.lock();
    // Set under the lock: a waiter woken for another directory reads its own meanwhile.
    for (std::size_t i = 0; i < batch.size(); ++i) batch[i]->result = std::move(results[i]);
    queue.busy = false;
    publishDone_.notify_all();
  }
  // The last one out removes the queue (one published by another may find it gone already).
  auto it = publishing_.find(parent);
  if (it != publishing_.end() && !it->second.busy && it->second.waiting.empty()) {
    publishing_.erase(it);
  }
  return std::move(*mine.result);
}

// One guarded update adds every name of the batch; when it fails (a name taken, the directory
// gone), or a name comes twice, each is added on its own, for its own answer.
std::vector<Result<Inode>> Filesystem::publishBatch(Ino parent,
                                                    const std::vector<Publication*>& batch) {
  std::vector<DentryUpdate> updates;
  std::vector<Dentry> dentries;
  std::set<std::string_view> names;
  for (Publication* p : batch) {
    dentries.push_back({p->inode, encodeInode(p->inode)});
    updates.push_back({p->name, "", dentries.back().encoded});
    names.insert(p->name);
  }
  if (batch.size() > 1 && names.size() == batch.size()) {
    const Timestamp now = Timestamp::now();
    if (volume_.updateDir(dirObject(parent), updates, now).isOk()) {
      entriesChanged(parent, now);
      std::vector<Result<Inode>> added;
      for (std::size_t i = 0; i < batch.size(); ++i) {
        auto n = nodes_.remember(parent, batch[i]->name, dentries[i], true);
        added.emplace_back(withLocalSize(*n));
      }
      return added;
    }
  }
  std::vector<Result<Inode>> added;
  for (const Publication* p : batch) added.push_back(addEntry(parent, p->name, p->inode));
  return added;
}

void Filesystem::discard(NewFile& file) {
  if (file.published || !file.writer) return;
  file.writer->waitForUploads();
  std::vector<PieceId> written = piecesWritten(file.writer->changes());
  file.writer.reset();
  if (!written.empty()) dropGarbage(file.inode.ino, {}, {}, written);
}

}  // namespace tierfs::fs
