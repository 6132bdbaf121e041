#pragma once

#include <memory>
#include <string>

#include "backends/DirStore.h"
#include "backends/ObjectStore.h"
#include "backends/RadosStore.h"

namespace tierfs::backends {

enum class BackendKind { kDir, kRados };

// Everything needed to open a back end: the one place that names the concrete stores.
struct StoreConfig {
  BackendKind kind = BackendKind::kDir;
  DirStoreOptions dir;
  RadosOptions rados;
};

// Whether this build has the librados back end.
bool radosAvailable();

// Opens the configured store. Errors name the back end and what was wrong.
Result<std::unique_ptr<ObjectStore>> openStore(const StoreConfig& config);

}  // namespace tierfs::backends
