// CPU time of the calling thread: what background work (compression, indexing) is charged
// in its statistics and benchmarks.
#pragma once

#include <time.h>

namespace linecap {

inline double thread_cpu_seconds() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace linecap
