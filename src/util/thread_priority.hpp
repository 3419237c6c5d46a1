// The scheduling priority of one thread: how the daemon keeps the scheduler from giving a
// worker's CPU to ordinary work while packets wait in the rx ring.
//
// On Linux, policy and nice value are per thread (the "process" calls act on one task id).
// A nice value only ranks threads against others in the same scheduling group (the
// session's autogroup, or the systemd unit's cgroup); SCHED_FIFO / SCHED_RR rank above
// every normal thread of the machine, whatever its group.
#pragma once

#include <string>

#include "util/cpu_set.hpp"
#include "util/result.hpp"

namespace linecap {

struct ThreadPriority {
    enum class Kind { normal, nice, fifo, rr };
    Kind kind = Kind::normal;
    int value = 0;  // nice: -20..19; fifo / rr: real-time priority 1..99; normal: 0

    bool operator==(const ThreadPriority&) const = default;
};

// SCHED_FIFO or SCHED_RR: above every normal thread of the machine.
inline bool is_realtime(const ThreadPriority& priority) {
    return priority.kind == ThreadPriority::Kind::fifo || priority.kind == ThreadPriority::Kind::rr;
}

// "normal", "nice:-5", "fifo:1", "rr:10": the form the configuration uses.
std::string to_string(const ThreadPriority& priority);

// Gives the calling thread `priority` (normal: leaves it as inherited). Errors name the
// call and errno, e.g. "sched_setscheduler(SCHED_FIFO, 1): Operation not permitted".
Status apply_to_this_thread(const ThreadPriority& priority);

// Where one of the daemon's own threads (not an EAL lcore) runs and how it ranks: `cpus`
// empty = the CPUs it inherited.
struct ThreadPlacement {
    CpuSet cpus;
    ThreadPriority priority;
};

// Moves the calling thread onto placement.cpus and gives it placement.priority. Errors
// name the call, e.g. "sched_setaffinity(CPUs 1,3): Invalid argument".
Status apply_to_this_thread(const ThreadPlacement& placement);

}  // namespace linecap
