#include "util/idle_priority.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "util/io_status.hpp"

namespace linecap {
namespace {

// <linux/ioprio.h> is not in every libc's headers; the ABI is stable.
constexpr int kIoprioWhoProcess = 1;  // with id 0: the calling thread
constexpr int kIoprioClassNone = 0;  // the default: derived from the CPU priority
constexpr int kIoprioClassIdle = 3;
constexpr int kIoprioClassShift = 13;

}  // namespace

void lower_to_idle_priority(const char* who) {
    sched_param none{};
    if (const int rc = pthread_setschedparam(pthread_self(), SCHED_IDLE, &none); rc != 0)
        spdlog::warn("{}: cannot run at idle CPU priority ({}); it competes with the writer", who, errno_text(rc));
    if (::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, kIoprioClassIdle << kIoprioClassShift) != 0)
        spdlog::debug("{}: idle I/O priority not available: {}", who, errno_text(errno));
}

void restore_normal_priority(const char* who) {
    sched_param none{};
    if (const int rc = pthread_setschedparam(pthread_self(), SCHED_OTHER, &none); rc != 0)
        spdlog::debug("{}: cannot return to normal CPU priority: {}", who, errno_text(rc));
    if (::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, kIoprioClassNone << kIoprioClassShift) != 0)
        spdlog::debug("{}: cannot return to normal I/O priority: {}", who, errno_text(errno));
}

}  // namespace linecap
