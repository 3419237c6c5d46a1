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

    template <class F, class... Group>
    static void fields(F&& f, Group&... g) {
        f(g.rx_packets...);
        f(g.rx_bytes...);
        f(g.filtered_packets...);
        f(g.writer_full_packets...);
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
inline constexpr DropReason<QueueCounts> kWriterFullDrop{"writer_full", &QueueCounts::writer_full_packets};

struct alignas(64) LcoreCounters {
    OwnedCounter loops;                 // heartbeat: advances on every poll loop iteration
    OwnedCounter busy_loops;            // iterations in which some queue returned packets
    OwnedCounter busy_cycles;           // TSC cycles spent in busy iterations
    OwnedCounter total_cycles;          // TSC cycles since the loop started
    OwnedCounter packets;               // packets handled (for cycles per packet)
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
inline constexpr MetricDecl kWorkerPollingMetric{"linecap_worker_polling", "1 while the worker's poll loop runs.",
                                                 MetricType::gauge};

}  // namespace linecap
