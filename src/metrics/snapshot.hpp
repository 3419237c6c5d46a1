// One collection's worth of numbers: plain values copied out of the engine's atomics and
// the ethdev stats by MetricsCollector::collect(). The exposition and the readiness
// verdict are computed from a snapshot only, never from live counters, so a scrape costs
// the data path nothing and sees one consistent collection.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metrics/filesystem_usage.hpp"
#include "metrics/port_stats.hpp"
#include "output/writer.hpp"

namespace linecap {

struct StreamSample {
    std::string port;
    uint16_t queue = 0;
    // From the worker (QueueCounters).
    uint64_t rx_packets = 0;
    uint64_t rx_bytes = 0;
    uint64_t filtered_packets = 0;
    uint64_t writer_full_packets = 0;
    // From the writer (StreamCounters).
    uint64_t written_packets = 0;
    uint64_t written_bytes = 0;
    uint64_t file_bytes = 0;
    uint64_t write_error_packets = 0;
    uint64_t disk_full_packets = 0;
    uint64_t files_finalised = 0;
};

struct PortSample {
    std::string name;
    std::string device;
    PortIdentity identity;
    PortCounters counters;   // never decreasing (driver-side resets are folded in)
    PortLink link;
};

struct WorkerSample {
    unsigned lcore = 0;
    uint64_t loops = 0;               // heartbeat
    double busy_ratio = 0;            // over the last collection interval
    double cycles_per_packet = 0;     // over the last interval; NaN when no packets
    bool polling = false;
};

struct LatencySample {
    std::array<uint64_t, WriteLatency::kBuckets> per_bucket{};  // not cumulative; last = overflow
    uint64_t sum_ns = 0;
};

// Retention (output/retention.hpp). The horizon is computed at collection time from the
// oldest kept packet, so it grows by itself between deletions.
struct RetentionSample {
    double horizon_seconds = 0;       // age of the oldest packet kept; 0 when nothing is kept
    uint64_t files = 0;
    uint64_t bytes = 0;
    uint64_t held_files = 0;
    uint64_t deleted_files = 0;
    uint64_t deleted_bytes = 0;
    bool budget_unmet = false;
};

// The background indexer (store/index_service.hpp); absent when output.index is off.
struct IndexingSample {
    uint64_t built_files = 0;
    uint64_t failed_files = 0;
    uint64_t skipped_files = 0;
    uint64_t queued_files = 0;
    uint64_t pcap_bytes = 0;
    uint64_t index_bytes = 0;
    double busy_seconds = 0;
};

// The background scrub (output/scrub.hpp); absent when output.scrub.enabled is off.
struct ScrubSample {
    uint64_t ok_files = 0;
    uint64_t mismatched_files = 0;
    uint64_t missing_manifests = 0;
    uint64_t bad_manifests = 0;
    uint64_t unreadable_files = 0;
    uint64_t bytes_read = 0;
    uint64_t damaged_files = 0;
    uint64_t passes = 0;
    double last_pass_end_seconds = 0;  // Unix time; 0: no pass completed yet
    double period_seconds = 0;
};

struct MetricsSnapshot {
    bool collected = false;           // false until the first collect()
    std::vector<StreamSample> streams;
    std::vector<PortSample> ports;
    std::vector<WorkerSample> workers;
    bool all_workers_polling = false;
    std::optional<LatencySample> write_latency;
    std::optional<FilesystemUsage> filesystem;
    uint64_t backlog_blocks = 0;
    RetentionSample retention;
    std::optional<IndexingSample> indexing;
    std::optional<ScrubSample> scrub;
};

}  // namespace linecap
