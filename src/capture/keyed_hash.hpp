// The capture policies' per-packet hashes (capture/flow_cap.hpp: flow keys,
// capture/dedup.hpp: packet heads), over words the caller already holds in registers.
//
// Flow keys (16 or 40 bytes): XXH3's construction for short inputs: the words in pairs,
// each word XORed with a word of the key, each pair multiplied to 128 bits and folded to 64
// (high half XOR low half), the folds summed with the keyed length, then XXH3's avalanche.
// A 16-byte piece costs one multiplication, and nothing is copied or looped over (XXH3
// itself wants its input in memory: a flow key stored only to be read back).
//
// Packet heads (64 bytes): NH (the hash under UMAC and VMAC) over 32-bit words: each word
// plus a word of the key, modulo 2^32, multiplied in pairs to 64 bits, the products summed;
// then the same keyed length and avalanche. Two different heads collide with probability
// at most 2^-32 over the key, plenty for finding candidates (dedup compares them), and in
// SSE2 (every x86-64 CPU) two products take one instruction: 8.8 TSC cycles per 60-byte
// head against 14.3 for four of the 128-bit pairs above (2026-12-02, this VM).
//
// The key is drawn at random for each queue, so whoever sends the packets cannot choose
// inputs that collide (two flows sharing one count) or pile into one bucket (dedup
// candidates to compare); unkeyed XXH3 promised neither.
#pragma once

#include <emmintrin.h>

#include <cstdint>
#include <cstring>
#include <random>

namespace linecap {

class KeyedHash {
public:
    static constexpr unsigned kWords = 8;  // the most words pair() takes; nh() takes them as 16 of 32 bits

    // A key from the system's random source (at start, on the control thread).
    static KeyedHash random() {
        std::random_device source;
        KeyedHash h;
        for (uint64_t& k : h.key_) k = uint64_t{source()} << 32 | source();
        return h;
    }

    // Words k and k + 1, keyed, multiplied and folded.
    uint64_t pair(unsigned k, uint64_t a, uint64_t b) const {
        const unsigned __int128 p = static_cast<unsigned __int128>(a ^ key_[k]) * (b ^ key_[k + 1]);
        return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
    }

    // NH of 64 bytes in four vectors (the key's words as 32-bit lanes; lanes 0 and 1, 2 and
    // 3 of each vector are the pairs).
    uint64_t nh(__m128i a, __m128i b, __m128i c, __m128i d) const {
        const auto* key = reinterpret_cast<const __m128i*>(key_);
        const auto products = [](__m128i v, __m128i k) {
            const __m128i t = _mm_add_epi32(v, k);
            return _mm_mul_epu32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(3, 3, 1, 1)));  // lane 0 * 1, 2 * 3
        };
        __m128i sum = _mm_add_epi64(_mm_add_epi64(products(a, _mm_loadu_si128(key)), products(b, _mm_loadu_si128(key + 1))),
                                    _mm_add_epi64(products(c, _mm_loadu_si128(key + 2)), products(d, _mm_loadu_si128(key + 3))));
        sum = _mm_add_epi64(sum, _mm_unpackhi_epi64(sum, sum));
        return static_cast<uint64_t>(_mm_cvtsi128_si64(sum));
    }
    // The same, word by word (what the tests hold nh to).
    uint64_t nh_reference(const uint8_t (&bytes)[64]) const {
        uint32_t w[16], k[16];
        std::memcpy(w, bytes, sizeof w);
        std::memcpy(k, key_, sizeof k);
        uint64_t sum = 0;
        for (unsigned i = 0; i < 16; i += 2) sum += uint64_t{uint32_t(w[i] + k[i])} * uint32_t(w[i + 1] + k[i + 1]);
        return sum;
    }

    // The hash of an input of `len` bytes whose pairs summed to `sum` (or its NH). Never 0 (the
    // policies' tables mark a free entry with 0): the top bit is set, not the bottom one,
    // which picks the bucket (set, it left half the buckets unused).
    uint64_t finish(uint64_t sum, uint32_t len) const {
        uint64_t h = sum + (len ^ key_[kWords]) * 0x9E3779B185EBCA87ull;
        h ^= h >> 37;
        h *= 0x165667919E3779F9ull;
        h ^= h >> 32;
        return h | kNeverZero;
    }
    static constexpr uint64_t kNeverZero = uint64_t{1} << 63;

private:
    uint64_t key_[kWords + 1] = {};  // the words', then the length's
};

}  // namespace linecap
