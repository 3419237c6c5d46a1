// The buckets of the capture policies' per-queue tables (capture/flow_cap.hpp,
// capture/dedup.hpp): kBucketWays entries in one 64-byte cache line, laid out by field
// (the ways' 64-bit hashes side by side at the start of the line, then the rest of each
// field), so a lookup compares all the hashes at once and touches only the fields of the
// way it finds.
#pragma once

#include <bit>
#include <cstdint>
#if defined(__SSE4_1__)
#include <smmintrin.h>
#endif

namespace linecap {

inline constexpr unsigned kBucketWays = 4;

// The way whose hash is `hash`, or kBucketWays: one mask from all the comparisons, no
// branch per way (which way matches is data; a mispredicted branch costs more than the
// whole lookup). `hashes`: kBucketWays values, 16-byte aligned.
inline unsigned find_way(const uint64_t* hashes, uint64_t hash) {
#if defined(__SSE4_1__)
    static_assert(kBucketWays == 4, "two 2-lane compares");
    const __m128i h = _mm_set1_epi64x(static_cast<long long>(hash));
    const __m128i lo = _mm_cmpeq_epi64(_mm_load_si128(reinterpret_cast<const __m128i*>(hashes)), h);
    const __m128i hi = _mm_cmpeq_epi64(_mm_load_si128(reinterpret_cast<const __m128i*>(hashes + 2)), h);
    const unsigned mask = static_cast<unsigned>(_mm_movemask_pd(_mm_castsi128_pd(lo)) |
                                                _mm_movemask_pd(_mm_castsi128_pd(hi)) << 2);
#else
    unsigned mask = 0;
    for (unsigned w = 0; w < kBucketWays; ++w) mask |= unsigned{hashes[w] == hash} << w;
#endif
    return static_cast<unsigned>(std::countr_zero(mask | 1u << kBucketWays));
}

}  // namespace linecap
