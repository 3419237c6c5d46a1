#include "util/thread_priority.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace linecap {

std::string to_string(const ThreadPriority& priority) {
    switch (priority.kind) {
        case ThreadPriority::Kind::normal: return "normal";
        case ThreadPriority::Kind::nice: return "nice:" + std::to_string(priority.value);
        case ThreadPriority::Kind::fifo: return "fifo:" + std::to_string(priority.value);
        case ThreadPriority::Kind::rr: return "rr:" + std::to_string(priority.value);
    }
    return "?";
}

Status apply_to_this_thread(const ThreadPriority& priority) {
    // What the thread inherited stays: resetting an inherited nice value could itself need
    // a privilege the process lacks.
    if (priority.kind == ThreadPriority::Kind::normal) return {};
    const bool realtime = is_realtime(priority);
    const int policy = priority.kind == ThreadPriority::Kind::fifo ? SCHED_FIFO
                       : priority.kind == ThreadPriority::Kind::rr ? SCHED_RR
                                                                   : SCHED_OTHER;
    sched_param param{};
    param.sched_priority = realtime ? priority.value : 0;
    // pid 0 = the calling thread (Linux schedules threads, not processes).
    if (sched_setscheduler(0, policy, &param) != 0) {
        const int e = errno;
        return runtime_error("sched_setscheduler(" + to_string(priority) + "): " + std::strerror(e) +
                             (e == EPERM ? " (needs CAP_SYS_NICE, or an RLIMIT_RTPRIO of at least the priority)" : ""));
    }
    if (!realtime) {
        const int nice = priority.value;
        if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice) != 0) {
            const int e = errno;
            return runtime_error("setpriority(nice " + std::to_string(nice) + "): " + std::strerror(e) +
                                 (e == EACCES || e == EPERM ? " (needs CAP_SYS_NICE, or an RLIMIT_NICE that allows it)" : ""));
        }
    }
    return {};
}

Status apply_to_this_thread(const ThreadPlacement& placement) {
    if (!placement.cpus.empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (unsigned cpu : placement.cpus) {
            if (cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
        }
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            return runtime_error("sched_setaffinity(CPUs " + format_cpu_list(placement.cpus) + "): " +
                                 std::strerror(errno));
        }
    }
    return apply_to_this_thread(placement.priority);
}

}  // namespace linecap
