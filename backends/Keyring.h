#pragma once

#include <string>

#include "common/Result.h"

namespace tierfs::backends {

// A cephx keyring holds the secret that lets anyone act as its user on the whole cluster: it
// must be readable and writable by its owner alone. PermissionDenied when `path` is readable or
// writable by its group or by other users ("keyring /etc/ceph/x.keyring is readable by other
// users (mode 0644): chmod 600 it, or pass --allow-open-keyring"), unless `allowOpen`. A path
// that does not exist passes (librados reports a missing keyring itself); symlinks are followed.
// Never reads the file.
Status checkKeyringMode(const std::string& path, bool allowOpen);

// The same for the keyring librados reads from a `keyring` option value: a list separated by
// commas, semicolons or spaces, of which librados reads the first file that exists.
Status checkKeyringList(const std::string& list, bool allowOpen);

}  // namespace tierfs::backends
