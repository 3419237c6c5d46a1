// A free-running counter → UTC nanoseconds: the TSC (read once per burst on the worker),
// or a NIC's clock whose ticks the port writes into each packet (capture.timestamps,
// dpdk/rx_timestamp.hpp).
//
// The control thread re-anchors the clock to CLOCK_REALTIME periodically (a seqlock: the
// worker retries in the rare case it read during an update). Re-anchoring never steps
// backwards, so timestamps within one stream stay monotonic.
#pragma once

#include <atomic>
#include <cstdint>

namespace linecap {

class TscClock {
public:
    TscClock(uint64_t tsc_hz, uint64_t now_tsc, uint64_t now_ns) { anchor(tsc_hz, now_tsc, now_ns); }

    // One consistent anchor, for mapping many counter values (a burst's packets) at once.
    struct Mapping {
        uint64_t base_tsc;
        uint64_t base_ns;
        uint64_t mult;
        uint64_t to_ns(uint64_t tsc) const {
            const uint64_t delta = tsc > base_tsc ? tsc - base_tsc : 0;
            return base_ns + static_cast<uint64_t>((static_cast<unsigned __int128>(delta) * mult) >> kShift);
        }
    };

    Mapping mapping() const {
        for (;;) {
            const uint32_t seq = seq_.load(std::memory_order_acquire);
            const Mapping m{base_tsc_.load(std::memory_order_relaxed), base_ns_.load(std::memory_order_relaxed),
                            mult_.load(std::memory_order_relaxed)};
            std::atomic_thread_fence(std::memory_order_acquire);
            if ((seq & 1) == 0 && seq == seq_.load(std::memory_order_relaxed)) return m;
        }
    }

    uint64_t to_ns(uint64_t tsc) const { return mapping().to_ns(tsc); }

    // Control thread only.
    void anchor(uint64_t tsc_hz, uint64_t now_tsc, uint64_t realtime_ns) {
        uint64_t ns = realtime_ns;
        if (anchored_) {
            const uint64_t predicted = to_ns(now_tsc);
            if (predicted > ns) ns = predicted;  // never step back
        }
        const uint32_t seq = seq_.load(std::memory_order_relaxed);
        seq_.store(seq + 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        base_tsc_.store(now_tsc, std::memory_order_relaxed);
        base_ns_.store(ns, std::memory_order_relaxed);
        mult_.store(static_cast<uint64_t>((static_cast<unsigned __int128>(1000000000ull) << kShift) / tsc_hz),
                    std::memory_order_relaxed);
        seq_.store(seq + 2, std::memory_order_release);
        anchored_ = true;
    }

private:
    static constexpr unsigned kShift = 32;
    std::atomic<uint32_t> seq_{0};
    std::atomic<uint64_t> base_tsc_{0};
    std::atomic<uint64_t> base_ns_{0};
    std::atomic<uint64_t> mult_{0};
    bool anchored_ = false;
};

}  // namespace linecap
