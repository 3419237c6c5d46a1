// Idle CPU and I/O priority for the calling thread (SCHED_IDLE, IOPRIO_CLASS_IDLE): work
// that must never take CPU or disk time from capture — indexing, retrieval queries —
// runs only when nothing else wants the core or the disk. Threads created afterwards
// inherit both.
#pragma once

namespace linecap {

struct IdlePriorityResult {
    int cpu_error = 0;  // errno-style code of pthread_setschedparam, 0 = applied
    int io_error = 0;   // errno of ioprio_set, 0 = applied
};

IdlePriorityResult set_idle_priority();

}  // namespace linecap
