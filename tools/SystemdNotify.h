#pragma once

#include <string_view>

// Tells a service manager how the daemon is doing, through sd_notify(3): systemd's Type=notify
// units wait for READY=1 and show STATUS= in `systemctl status`. Each call is a no-op when
// NOTIFY_SOCKET is not set (the daemon was not started by a service manager). Thread-safe;
// nothing here fails the daemon: a message that cannot be sent is logged.
namespace tierfs::tools::notify {

// STATUS=text: what the daemon is doing now.
void status(std::string_view text);

// READY=1 with a status line, once the mount answers. A daemon that forked away from the process
// the service manager started also names itself (MAINPID=) when `forked` is set.
void ready(std::string_view text, bool forked);

// STOPPING=1 with a status line, when shutdown begins.
void stopping(std::string_view text);

}  // namespace tierfs::tools::notify
