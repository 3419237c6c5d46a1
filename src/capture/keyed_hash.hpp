// The capture policies' per-packet hashes (capture/flow_cap.hpp: flow keys,
// capture/dedup.hpp: packet heads), over 64-bit words the caller already holds.
//
// XXH3's construction for short inputs: the words in pairs, each word XORed with a word of
// the key, each pair multiplied to 128 bits and folded to 64 (high half XOR low half), the
// folds summed with the keyed length, then XXH3's avalanche. A 16-byte piece costs one
// multiplication, and nothing is copied or looped over (XXH3 itself wants its input in
// memory: a flow key or masked head stored only to be read back). The key is drawn at
// random for each queue, so whoever sends the packets cannot choose inputs that collide
// (two flows sharing one count) or pile into one bucket (dedup candidates to compare);
// unkeyed XXH3 promised neither.
#pragma once

#include <cstdint>
#include <random>

namespace linecap {

class KeyedHash {
public:
    static constexpr unsigned kWords = 8;  // the most words one hash takes

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

    // The hash of an input of `len` bytes whose pairs summed to `sum`. Never 0 (the
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
