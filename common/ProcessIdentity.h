#pragma once

#include <string>
#include <string_view>

// Who wrote a record that a crash may leave behind (a rename intent), precisely enough for a later
// process to tell that its writer is dead and will never finish the work: the boot, the PID
// namespace, the PID and the process's start time. A PID alone could have been reused; the start
// time tells a new process with that PID apart, and the boot and namespace say the PID means the
// same thing to the reader.

namespace tierfs {

// This process, as "host=H boot=B pidns=N pid=P start=T" (T in clock ticks after boot).
const std::string& processIdentity();

enum class Liveness {
  kAlive,    // the process runs (or at least has not exited yet)
  kGone,     // it exited: no process has its PID and start time in this boot and namespace
  kUnknown,  // another boot, machine or PID namespace, or not an identity: cannot tell
};

// Whether the process an identity names is still running, seen from this process.
Liveness processLiveness(std::string_view identity);

}  // namespace tierfs
