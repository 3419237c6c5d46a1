// The index builder's in-memory inverted list: for each key (IP protocol, port, IPv4 or
// IPv6 address) the ascending list of blocks it occurs in, and (index version 2, for
// ports and addresses) the ascending list of records (file ordinals) it occurs in.
//
// Built for the per-packet cost (the daemon indexes every file it writes, and at small
// frames that is ~15 million packets a second of capture): one probe of an
// open-addressing table per key occurrence, and a block is appended to a key's list only
// the first time the key is seen in that block — no per-packet sorting. Keys are sorted
// once, at the end, when the table is serialised (sorted_keys()). Measured with
// bench/index_cost: this replaced per-block sort/unique plus a final sort of all
// (key, block) pairs, which cost ~500 ns a packet at 64-byte frames.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

namespace linecap {

template <typename K>
class PostingsTable {
public:
    PostingsTable() { slots_.resize(kInitialSlots); }

    // Records that `key` occurs in `block` (and, with `record` != kNoRecord, in that
    // record). Blocks and records must be added in ascending order.
    static constexpr uint32_t kNoRecord = UINT32_MAX;
    void add(const K& key, uint32_t block, uint32_t record = kNoRecord) {
        const size_t mask = slots_.size() - 1;
        for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
            Slot& s = slots_[i];
            if (s.list == kEmpty) {
                s.key = key;
                s.list = static_cast<uint32_t>(lists_.size());
                s.last_block = block;
                s.last_record = record;
                lists_.push_back({block});
                records_.emplace_back();
                if (record != kNoRecord) records_.back().push_back(record);
                ++entries_;
                if (lists_.size() * 2 > slots_.size()) grow();
                return;
            }
            if (s.key == key) {
                if (s.last_block != block) {
                    s.last_block = block;
                    lists_[s.list].push_back(block);
                    ++entries_;
                }
                if (record != kNoRecord && s.last_record != record) {  // a key twice in one record counts once
                    s.last_record = record;
                    records_[s.list].push_back(record);
                }
                return;
            }
        }
    }

    size_t keys() const { return lists_.size(); }
    size_t entries() const { return entries_; }  // (key, block) pairs

    // Every key with its block list, keys ascending.
    struct Entry {
        K key;
        const std::vector<uint32_t>* blocks;
        const std::vector<uint32_t>* records;  // empty when added without records
    };
    std::vector<Entry> sorted_keys() const {
        std::vector<Entry> out;
        out.reserve(lists_.size());
        for (const Slot& s : slots_)
            if (s.list != kEmpty) out.push_back({s.key, &lists_[s.list], &records_[s.list]});
        std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
        return out;
    }

private:
    static constexpr uint32_t kEmpty = UINT32_MAX;
    static constexpr size_t kInitialSlots = 1024;

    struct Slot {
        K key{};
        uint32_t list = kEmpty;
        uint32_t last_block = 0;
        uint32_t last_record = kNoRecord;
    };

    // Fibonacci hashing of the key's bits: consecutive addresses and ports spread well.
    static size_t hash(const K& key) {
        uint64_t h = 0;
        if constexpr (sizeof(K) <= 8) {
            uint64_t v = 0;
            std::memcpy(&v, &key, sizeof(K));
            h = v * 0x9E3779B97F4A7C15ull;
        } else {
            uint64_t a, b;
            std::memcpy(&a, &key, 8);
            std::memcpy(&b, reinterpret_cast<const uint8_t*>(&key) + 8, 8);
            h = (a * 0x9E3779B97F4A7C15ull) ^ std::rotl(b * 0xC2B2AE3D27D4EB4Full, 31);
        }
        return static_cast<size_t>(h ^ h >> 32);  // the product's well-mixed high bits into the mask
    }

    void grow() {
        std::vector<Slot> old(slots_.size() * 2);
        old.swap(slots_);
        const size_t mask = slots_.size() - 1;
        for (const Slot& s : old) {
            if (s.list == kEmpty) continue;
            size_t i = hash(s.key) & mask;
            while (slots_[i].list != kEmpty) i = (i + 1) & mask;
            slots_[i] = s;
        }
    }

    std::vector<Slot> slots_;
    std::vector<std::vector<uint32_t>> lists_;
    std::vector<std::vector<uint32_t>> records_;  // parallel to lists_
    size_t entries_ = 0;
};

}  // namespace linecap
