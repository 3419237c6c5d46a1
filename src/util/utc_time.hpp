// The host's wall clock (CLOCK_REALTIME) in nanoseconds since the epoch, and the one text
// form of such a time that manifests, logs, the CLI and the API all print.
#pragma once

#include <time.h>

#include <cstdint>
#include <string>

namespace linecap {

inline uint64_t utc_now_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// "2026-11-30T02:10:00.000123456Z"
std::string format_utc_ns(uint64_t ns);

}  // namespace linecap
