// Byte counts for people: "812 B", "1018.8 KiB", "3.21 GiB" (binary units).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace linecap {

inline std::string human_bytes(uint64_t bytes, int decimals = 1) {
    static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = static_cast<double>(bytes);
    size_t u = 0;
    while (v >= 1024 && u + 1 < std::size(kUnits)) {
        v /= 1024;
        ++u;
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.*f %s", u == 0 ? 0 : decimals, v, kUnits[u]);
    return text;
}

}  // namespace linecap
