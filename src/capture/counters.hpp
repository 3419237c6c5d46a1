// Per-lcore counters. Each is written by exactly one lcore (OwnedCounter: relaxed load +
// store) and read by the metrics thread with relaxed loads; every struct sits on its own
// cache lines so workers never share a line. The metrics read from them are declared
// here, next to them (util/metric.hpp).
#pragma once

#include <cstdint>

#include "util/counter.hpp"
#include "util/metric.hpp"

namespace linecap {

// One (port, queue) as seen by the worker that polls it; Counter is OwnedCounter for the
// worker's live counters, uint64_t for a snapshot (QueueCounts).
template <class Counter>
struct QueueCountersOf {
    Counter rx_packets{};            // returned by rte_eth_rx_burst
    Counter rx_bytes{};
    Counter filtered_packets{};      // rejected by the capture filter (not a drop)
    Counter writer_full_packets{};   // no free write block: output slower than traffic
    // Policies that keep less on purpose (not drops): capture.flow_cap, capture.dedup.
    Counter flow_cap_cut_packets{};      // written, shortened to snaplen_after
    Counter flow_cap_dropped_packets{};  // not written (snaplen_after 0)
    Counter flow_cap_saved_bytes{};      // packet bytes the cap kept out of the files
    Counter flow_cap_evicted_flows{};    // live flows pushed out of a full table bucket
    Counter dedup_packets{};             // copies not written
    Counter dedup_saved_bytes{};
    // Timestamps (capture.timestamps): stamps raised to the one before (never going back),
    // and packets of a port-stamped queue that came without the port's stamp (TSC instead).
    Counter clock_clamped_packets{};
    Counter clock_unstamped_packets{};

    template <class F, class... Group>
    static void fields(F&& f, Group&... g) {
        f(g.rx_packets...);
        f(g.rx_bytes...);
        f(g.filtered_packets...);
        f(g.writer_full_packets...);
        f(g.flow_cap_cut_packets...);
        f(g.flow_cap_dropped_packets...);
        f(g.flow_cap_saved_bytes...);
        f(g.flow_cap_evicted_flows...);
        f(g.dedup_packets...);
        f(g.dedup_saved_bytes...);
        f(g.clock_clamped_packets...);
        f(g.clock_unstamped_packets...);
    }
};
struct alignas(64) QueueCounters : QueueCountersOf<OwnedCounter> {};
using QueueCounts = QueueCountersOf<uint64_t>;

// Labels: port, queue.
inline constexpr FieldMetric<QueueCounts> kRxPacketsMetric{
    {"linecap_rx_packets_total", "Packets the worker received from the rx queue (rte_eth_rx_burst).",
     MetricType::counter},
    &QueueCounts::rx_packets};
inline constexpr FieldMetric<QueueCounts> kRxBytesMetric{
    {"linecap_rx_bytes_total", "Bytes (wire length) the worker received from the rx queue.", MetricType::counter},
    &QueueCounts::rx_bytes};
inline constexpr FieldMetric<QueueCounts> kFilteredPacketsMetric{
    {"linecap_filtered_packets_total", "Packets rejected by the capture filter (by design, not a drop).",
     MetricType::counter},
    &QueueCounts::filtered_packets};
// Packets the policies kept out on purpose are, like filtered ones, not drops: a packet
// that reached a port is written, filtered, flow-capped (dropped by the cap), deduplicated
// or dropped(reason). Cut packets are written (shortened) and counted among the written.
inline constexpr FieldMetric<QueueCounts> kFlowCapCutPacketsMetric{
    {"linecap_flow_cap_cut_packets_total",
     "Packets written shortened to capture.flow_cap.snaplen_after because their flow had used its allowance.",
     MetricType::counter},
    &QueueCounts::flow_cap_cut_packets};
inline constexpr FieldMetric<QueueCounts> kFlowCapDroppedPacketsMetric{
    {"linecap_flow_cap_dropped_packets_total",
     "Packets not written because their flow had used its capture.flow_cap allowance (by design, not a drop).",
     MetricType::counter},
    &QueueCounts::flow_cap_dropped_packets};
inline constexpr FieldMetric<QueueCounts> kFlowCapSavedBytesMetric{
    {"linecap_flow_cap_saved_bytes_total",
     "Packet bytes capture.flow_cap kept out of the capture files (cut or not written).", MetricType::counter},
    &QueueCounts::flow_cap_saved_bytes};
inline constexpr FieldMetric<QueueCounts> kFlowCapEvictedFlowsMetric{
    {"linecap_flow_cap_evicted_flows_total",
     "Live flows pushed out of a full flow table bucket (they start over; raise capture.flow_cap.flows).",
     MetricType::counter},
    &QueueCounts::flow_cap_evicted_flows};
inline constexpr FieldMetric<QueueCounts> kDedupPacketsMetric{
    {"linecap_dedup_packets_total",
     "Duplicate packets not written (capture.dedup: equal to one written within the window; by design, not a "
     "drop).",
     MetricType::counter},
    &QueueCounts::dedup_packets};
inline constexpr FieldMetric<QueueCounts> kDedupSavedBytesMetric{
    {"linecap_dedup_saved_bytes_total", "Packet bytes capture.dedup kept out of the capture files.",
     MetricType::counter},
    &QueueCounts::dedup_saved_bytes};

inline constexpr FieldMetric<QueueCounts> kClockClampedPacketsMetric{
    {"linecap_clock_clamped_packets_total",
     "Packets whose timestamp was earlier than the one before it in the stream and was raised to it (timestamps "
     "within a file never go back; a port clock stepped back, or stamps from two clocks).",
     MetricType::counter},
    &QueueCounts::clock_clamped_packets};
inline constexpr FieldMetric<QueueCounts> kClockUnstampedPacketsMetric{
    {"linecap_clock_unstamped_packets_total",
     "Packets of a port-stamped queue (capture.timestamps) that arrived without the port's rx timestamp and got the "
     "host's TSC time instead.",
     MetricType::counter},
    &QueueCounts::clock_unstamped_packets};

inline constexpr DropReason<QueueCounts> kWriterFullDrop{"writer_full", &QueueCounts::writer_full_packets};

struct alignas(64) LcoreCounters {
    OwnedCounter loops;                 // heartbeat: advances on every poll loop iteration
    OwnedCounter busy_loops;            // iterations in which some queue returned packets
    OwnedCounter busy_cycles;           // TSC cycles spent in busy iterations
    OwnedCounter total_cycles;          // TSC cycles since the loop started
    OwnedCounter packets;               // packets handled (for cycles per packet)
    OwnedCounter max_poll_gap_ns;       // longest time between two polls in the last whole second
};

// Worker metrics, label lcore: computed by the collector from LcoreCounters (ratios over
// the collection interval) and WorkerControl::polling.
inline constexpr MetricDecl kWorkerBusyRatioMetric{
    "linecap_worker_busy_ratio",
    "Share of the worker's TSC cycles spent in iterations that received packets, over the last collection interval.",
    MetricType::gauge};
inline constexpr MetricDecl kWorkerHeartbeatMetric{
    "linecap_worker_heartbeat_total", "Poll loop iterations; stops advancing when the worker stalls.",
    MetricType::counter};
inline constexpr MetricDecl kWorkerCyclesPerPacketMetric{
    "linecap_worker_cycles_per_packet",
    "Busy TSC cycles per packet handled over the last collection interval; NaN when the worker handled no packet.",
    MetricType::gauge};
inline constexpr MetricDecl kWorkerMaxPollGapMetric{
    "linecap_worker_max_poll_gap_seconds",
    "Longest time between two polls of the worker's queues in the last whole second: its own work, its idle "
    "sleep, and any time its CPU ran something else. A queue loses packets when this exceeds what its rx ring "
    "(for net_af_xdp: the PMD's 2048 fill-ring buffers) holds at the arrival rate.",
    MetricType::gauge};
inline constexpr MetricDecl kWorkerPollingMetric{"linecap_worker_polling", "1 while the worker's poll loop runs.",
                                                 MetricType::gauge};

}  // namespace linecap
