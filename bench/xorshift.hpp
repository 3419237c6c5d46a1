// The benchmarks' deterministic generator: xorshift64, so a given seed makes the same
// traffic on every machine and every run (bench/compress.cpp, bench/store/gen_store.cpp).
#pragma once

#include <cstdint>

struct Rng {
    uint64_t s;
    uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    uint32_t below(uint32_t n) { return static_cast<uint32_t>((next() >> 11) % n); }
    double unit() { return static_cast<double>(next() >> 11) / 9007199254740992.0; }
};
