#include "util/idle_priority.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace linecap {
namespace {

// <linux/ioprio.h> is not in every libc's headers; the ABI is stable.
constexpr int kIoprioWhoProcess = 1;  // with id 0: the calling thread
constexpr int kIoprioClassIdle = 3;
constexpr int kIoprioClassShift = 13;

}  // namespace

IdlePriorityResult set_idle_priority() {
    IdlePriorityResult r;
    sched_param none{};
    r.cpu_error = pthread_setschedparam(pthread_self(), SCHED_IDLE, &none);
    if (::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, kIoprioClassIdle << kIoprioClassShift) != 0) r.io_error = errno;
    return r;
}

}  // namespace linecap
