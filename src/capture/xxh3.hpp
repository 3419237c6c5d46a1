// XXH3 (Debian libxxhash-dev) for the capture policies' per-packet hashes
// (capture/flow_cap.hpp, capture/dedup.hpp).
//
// Short inputs (up to 240 bytes: flow keys, packet heads, small packets) are hashed by the
// header's code compiled into the worker: a call through the shared library would cost
// more than the hash, and XXH3's code for them is scalar anyway. Longer inputs go to the
// library's runtime-dispatched copy (xxh_x86dispatch: AVX2 or AVX-512 where the CPU has
// them), about 3 times faster per byte than the SSE2 code this build's target (DPDK's
// -march=corei7) allows inline; both give the same value (XXH3 is defined by its output).
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
// First as a library (the dispatching functions are the shared library's) ...
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h>
#endif
// ... then inline: xxhash.h allows this second inclusion, its inline copy is renamed.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace linecap {

// The longest input XXH3 hashes without its vector loop.
inline constexpr size_t kXxh3ShortMax = XXH3_MIDSIZE_MAX;

inline uint64_t xxh3_64(const void* data, size_t len) {
#if defined(__x86_64__)
    if (len > kXxh3ShortMax) return XXH3_64bits_dispatch(data, len);
#endif
    return XXH3_64bits(data, len);
}

inline uint64_t xxh3_64(const void* data, size_t len, uint64_t seed) {
#if defined(__x86_64__)
    if (len > kXxh3ShortMax) return XXH3_64bits_withSeed_dispatch(data, len, seed);
#endif
    return XXH3_64bits_withSeed(data, len, seed);
}

}  // namespace linecap
