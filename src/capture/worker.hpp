// The worker lcore: a run-to-completion poll loop over its (port, queue) list.
//
// Per burst: rx, one TSC read (or each packet's rx timestamp from the port), filter (JIT), duplicate suppression and per-flow caps when
// configured (capture/dedup.hpp, capture/flow_cap.hpp), copy records into the queue's write block,
// free the mbufs at once. Full or old blocks go to the writer over an SPSC ring; with no
// free block the rest of the burst is dropped and counted (writer_full). The loop never
// allocates, logs, locks, blocks or makes a syscall while packets arrive; only a loop in
// which no queue had a packet may sleep (capture.idle_sleep_us), bounded, so that the CPU
// serves other threads while the link is idle.
#pragma once

#include <rte_common.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "capture/counters.hpp"
#include "capture/dedup.hpp"
#include "capture/flow_cap.hpp"
#include "capture/packet_stamps.hpp"
#include "capture/policy.hpp"
#include "capture/tsc_clock.hpp"
#include "config/config.hpp"
#include "dpdk/rx_timestamp.hpp"
#include "output/stream.hpp"

namespace linecap {

struct WorkerQueue {
    uint16_t port_id = 0;
    uint16_t queue = 0;
    Stream* stream = nullptr;
    QueueCounters* counters = nullptr;
    const PolicySlot* policy = nullptr;
    DedupQueue* dedup = nullptr;        // null: capture.dedup is off for the port
    FlowCapQueue* flow_cap = nullptr;   // null: capture.flow_cap is off for the port
    // Where the packets' timestamps come from (dpdk/rx_timestamp.hpp): tsc = the
    // iteration's one TSC read; otherwise per packet from the mbuf's rx timestamp field
    // (capture/packet_stamps.hpp).
    StampSource stamps = StampSource::tsc;
    PortStamps port_stamps;
    // Loop state, touched only by the worker.
    WriteBlock* block = nullptr;
    bool rotation_pending = false;  // a rotation mark still has to reach the writer
    uint64_t last_ts_ns = 0;        // the stream's latest stamp: none later goes below it
    // The stream's next wall-clock rotation boundary (UINT64_MAX: none); a queue stamped
    // from a replayed file takes its first one from its first packet.
    uint64_t next_boundary_ns = UINT64_MAX;
    bool boundary_from_first_packet = false;

    // Whether the stamps follow the host's clock (the TSC, or a NIC clock mapped to UTC):
    // only then does a file end at its boundary while no packet arrives.
    bool on_host_time() const { return stamps != StampSource::port_utc; }
};

// Shared between the control thread and one worker.
struct WorkerControl {
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> rotate_requests{0};  // bumped on SIGHUP: rotate every file now
    std::atomic<bool> polling{false};          // set once the loop runs (readiness)
};

struct alignas(RTE_CACHE_LINE_SIZE) WorkerContext {
    unsigned lcore = 0;
    std::vector<WorkerQueue> queues;
    LcoreCounters* counters = nullptr;
    const TscClock* clock = nullptr;
    WorkerControl* control = nullptr;
    uint64_t tsc_hz = 0;
    uint64_t rotate_interval_ns = 0;    // 0: no wall-clock rotation
    uint64_t flush_interval_tsc = 0;    // partial blocks older than this are handed over
    uint16_t burst = 64;
    unsigned idle_sleep_us = 0;         // sleep after a loop that found no packet; 0 = never
    unsigned sleep_below = 1;           // ... or fewer packets than this
    FileKind format = FileKind::pcap;  // record encoding the writer expects
};

// rte_eal_remote_launch entry point; arg is a WorkerContext*.
int worker_main(void* arg);

// Next wall-clock rotation boundary strictly after `now_ns` (multiples of the interval
// since the epoch, so files start at :00, :05, … for 300 s).
inline uint64_t next_rotation_boundary(uint64_t now_ns, uint64_t interval_ns) {
    return (now_ns / interval_ns + 1) * interval_ns;
}

}  // namespace linecap
