// Per-lcore counters. Each is written by exactly one lcore with a relaxed load + store
// (no read-modify-write, no lock prefix) and read by the metrics thread with relaxed
// loads; every struct sits on its own cache lines so workers never share a line.
#pragma once

#include <atomic>
#include <cstdint>

namespace linecap {

class OwnedCounter {
public:
    // Only the owning thread calls add()/set().
    void add(uint64_t n) { value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
    void set(uint64_t v) { value_.store(v, std::memory_order_relaxed); }
    uint64_t get() const { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<uint64_t> value_{0};
};

// One (port, queue) as seen by the worker that polls it.
struct alignas(64) QueueCounters {
    OwnedCounter rx_packets;            // returned by rte_eth_rx_burst
    OwnedCounter rx_bytes;
    OwnedCounter filtered_packets;      // rejected by the capture filter (not a drop)
    OwnedCounter writer_full_packets;   // no free write block: output slower than traffic
};

struct alignas(64) LcoreCounters {
    OwnedCounter loops;                 // heartbeat: advances on every poll loop iteration
    OwnedCounter busy_loops;            // iterations in which some queue returned packets
    OwnedCounter busy_cycles;           // TSC cycles spent in busy iterations
    OwnedCounter total_cycles;          // TSC cycles since the loop started
    OwnedCounter packets;               // packets handled (for cycles per packet)
};

}  // namespace linecap
