#include "backends/StoreFactory.h"

namespace tierfs::backends {

bool radosAvailable() {
#ifdef TIERFS_WITH_RADOS
  return true;
#else
  return false;
#endif
}

Result<std::unique_ptr<ObjectStore>> openStore(const StoreConfig& config) {
  switch (config.kind) {
    case BackendKind::kDir: {
      if (config.dir.root.empty()) {
        return failure(Status::invalidArgument("dir back end: no path given"));
      }
      TIERFS_ASSIGN_OR_RETURN(auto store, DirStore::open(config.dir));
      return std::unique_ptr<ObjectStore>(std::move(store));
    }
    case BackendKind::kRados: {
#ifdef TIERFS_WITH_RADOS
      TIERFS_ASSIGN_OR_RETURN(auto store, RadosStore::connect(config.rados));
      return std::unique_ptr<ObjectStore>(std::move(store));
#else
      return failure(Status::notSupported("this tierfs was built without librados"));
#endif
    }
  }
  return failure(Status::invalidArgument("unknown back end kind"));
}

}  // namespace tierfs::backends
