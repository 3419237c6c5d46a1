// Counters one thread writes and another reads, and the plain copy of a group of them.
//
// A counter group is a struct template over the counter type (see QueueCountersOf in
// capture/counters.hpp): Of<OwnedCounter> or Of<std::atomic<uint64_t>> is what its owner
// writes, Of<uint64_t> a copy of it at one moment (a snapshot). The group lists its fields
// once, in a static `fields(f, groups...)` that calls f with the same field of every group,
// so read_counts() copies any group without naming a field.
#pragma once

#include <atomic>
#include <cstdint>

namespace linecap {

// Written by exactly one thread with a relaxed load + store (no read-modify-write, no lock
// prefix: cheap enough for a worker lcore), read by others with relaxed loads.
class OwnedCounter {
public:
    // Only the owning thread calls add()/set().
    void add(uint64_t n) { value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
    void set(uint64_t v) { value_.store(v, std::memory_order_relaxed); }
    uint64_t get() const { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<uint64_t> value_{0};
};

inline uint64_t counter_value(const OwnedCounter& c) { return c.get(); }
inline uint64_t counter_value(const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); }

// A snapshot of a counter group: every field read once with a relaxed load.
template <template <class> class Of, class Counter>
Of<uint64_t> read_counts(const Of<Counter>& live) {
    Of<uint64_t> copy;
    Of<uint64_t>::fields([](uint64_t& to, const Counter& from) { to = counter_value(from); }, copy, live);
    return copy;
}

}  // namespace linecap
