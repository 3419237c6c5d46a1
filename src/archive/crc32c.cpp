#include "archive/crc32c.hpp"

#include <array>
#include <cstring>

namespace linecap {
namespace {

constexpr uint32_t kPolyReflected = 0x82f63b78u;

struct Tables {
    std::array<std::array<uint32_t, 256>, 8> t{};
    constexpr Tables() {
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolyReflected : c >> 1;
            t[0][i] = c;
        }
        for (uint32_t i = 0; i < 256; ++i)
            for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
};

constexpr Tables kTables{};

uint32_t crc32c_portable(uint32_t crc, const uint8_t* p, size_t size) {
    const auto& t = kTables.t;
    crc = ~crc;
    while (size >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);  // little-endian host assumed (x86-64, aarch64)
        v ^= crc;
        crc = t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff] ^ t[5][(v >> 16) & 0xff] ^
              t[4][(v >> 24) & 0xff] ^ t[3][(v >> 32) & 0xff] ^ t[2][(v >> 40) & 0xff] ^
              t[1][(v >> 48) & 0xff] ^ t[0][v >> 56];
        p += 8;
        size -= 8;
    }
    while (size--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const uint8_t* p, size_t size) {
    uint64_t c = ~crc;
    while (size >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        size -= 8;
    }
    auto c32 = static_cast<uint32_t>(c);
    while (size--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return ~c32;
}
const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
    if (kHaveSse42) return crc32c_sse42(crc, p, size);
#endif
    return crc32c_portable(crc, p, size);
}

// Exposed for the tests: both implementations must agree.
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t size) {
    return crc32c_portable(crc, static_cast<const uint8_t*>(data), size);
}

}  // namespace linecap
