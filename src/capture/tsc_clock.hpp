// A free-running counter → UTC nanoseconds: the TSC (read once per burst on the worker),
// or a NIC's clock whose ticks the port writes into each packet (capture.timestamps,
// dpdk/rx_timestamp.hpp).
//
// The control thread disciplines the clock to CLOCK_REALTIME once a second, the way NTP
// disciplines a kernel clock: it measures the counter's real rate against realtime over
// everything since the last step (a nominal rate is only a starting point: DPDK rounds an
// estimated TSC rate to 10 MHz, 0.2 % off on a 2.695 GHz host, which is 2 ms a second) and
// slews away the remaining offset by running slightly fast or slow until the next second.
// It never steps backwards, so timestamps within one stream stay monotonic; realtime ahead
// by more than kStepNs (a clock set, a suspended host) is a step forward. Workers read the
// mapping through a seqlock and retry in the rare case they read during an update.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace linecap {

class TscClock {
public:
    TscClock(uint64_t nominal_hz, uint64_t now_counter, uint64_t realtime_ns)
        : hz_(nominal_hz), rate_base_counter_(now_counter), rate_base_ns_(realtime_ns) {
        publish(now_counter, realtime_ns, 0);
    }

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

    // Realtime ahead of the clock by more than this is a step; anything less is slewed.
    static constexpr int64_t kStepNs = 100'000'000;
    // The fastest slew (parts per million of the rate): a rate error or offset the size of
    // DPDK's rounding is gone within a second, and timestamps never run more than this far
    // from the true rate while it happens.
    static constexpr int64_t kMaxSlewPpm = 5000;
    // The shortest span a rate is measured over (a microsecond of jitter is 10 ppm).
    static constexpr uint64_t kMinRateSpanNs = 100'000'000;

    // Control thread only, about once a second: the counter and realtime read together.
    void discipline(uint64_t now_counter, uint64_t realtime_ns) {
        const uint64_t predicted = to_ns(now_counter);
        const int64_t offset = static_cast<int64_t>(realtime_ns - predicted);  // > 0: the clock is behind
        if (offset > kStepNs) {
            rate_base_counter_ = now_counter;
            rate_base_ns_ = realtime_ns;
            publish(now_counter, realtime_ns, 0);
            return;
        }
        if (offset < -kStepNs) {  // realtime set back: measure the rate afresh, slew back down
            rate_base_counter_ = now_counter;
            rate_base_ns_ = realtime_ns;
        } else {
            measure_rate(now_counter, realtime_ns);
        }
        // The offset is made up over the next second: offset ns per 1e9 ns is offset/1000 ppm.
        publish(now_counter, predicted, std::clamp<int64_t>(offset / 1000, -kMaxSlewPpm, kMaxSlewPpm));
    }

    // Before the first timestamp is handed out: the rate measured since construction (at
    // least kMinRateSpanNs ago) and the clock set to realtime, backwards if need be.
    void calibrate(uint64_t now_counter, uint64_t realtime_ns) {
        measure_rate(now_counter, realtime_ns);
        publish(now_counter, realtime_ns, 0);
    }

    // The measured rate, counter ticks per second (the nominal one until measured).
    uint64_t hz() const { return hz_; }

private:
    static constexpr unsigned kShift = 32;
    

    void measure_rate(uint64_t now_counter, uint64_t realtime_ns) {
        if (realtime_ns < rate_base_ns_ + kMinRateSpanNs || now_counter <= rate_base_counter_) return;
        hz_ = static_cast<uint64_t>(static_cast<unsigned __int128>(now_counter - rate_base_counter_) * 1'000'000'000ull /
                                    (realtime_ns - rate_base_ns_));
    }

    void publish(uint64_t base_counter, uint64_t base_ns, int64_t slew_ppm) {
        const auto ns_per_second = static_cast<unsigned __int128>(1'000'000'000ll + slew_ppm * 1000);
        const auto mult = static_cast<uint64_t>((ns_per_second << kShift) / hz_);
        const uint32_t seq = seq_.load(std::memory_order_relaxed);
        seq_.store(seq + 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        base_tsc_.store(base_counter, std::memory_order_relaxed);
        base_ns_.store(base_ns, std::memory_order_relaxed);
        mult_.store(mult, std::memory_order_relaxed);
        seq_.store(seq + 2, std::memory_order_release);
    }

    std::atomic<uint32_t> seq_{0};
    std::atomic<uint64_t> base_tsc_{0};
    std::atomic<uint64_t> base_ns_{0};
    std::atomic<uint64_t> mult_{0};
    // Control thread only.
    uint64_t hz_;
    uint64_t rate_base_counter_;
    uint64_t rate_base_ns_;
};

}  // namespace linecap
