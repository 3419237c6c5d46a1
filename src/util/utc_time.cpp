#include "util/utc_time.hpp"

#include <cstdio>
#include <ctime>

namespace linecap {

std::string format_utc_ns(uint64_t ns) {
    const time_t seconds = static_cast<time_t>(ns / 1000000000u);
    struct tm utc {};
    gmtime_r(&seconds, &utc);
    char text[64];
    const size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
    char frac[16];
    std::snprintf(frac, sizeof frac, ".%09lluZ", static_cast<unsigned long long>(ns % 1000000000u));
    return std::string(text, n) + frac;
}

}  // namespace linecap
