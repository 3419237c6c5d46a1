// MetricsCollector: the only reader of the engine's counters on the metrics side.
//
// The control thread calls collect() about once a second (and once after the engine
// has stopped, so the last scrape is exact). collect() copies every counter out of the
// views with relaxed loads, reads ethdev stats, takes the store's file-system figures
// (statvfs, the holds; see StoreFigures), computes the per-interval
// worker ratios, and publishes the result as one snapshot under a mutex. Scrapes
// (Collect(), on an HTTP thread) build metric families from that snapshot only: they
// never touch engine memory or DPDK, and lcores never touch prometheus-cpp.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <optional>
#include <vector>

#include <prometheus/collectable.h>

#include "metrics/capture_views.hpp"
#include "metrics/exposition.hpp"
#include "metrics/filesystem_usage.hpp"
#include "metrics/monotonic_counter.hpp"
#include "metrics/port_stats.hpp"
#include "metrics/readiness.hpp"
#include "metrics/snapshot.hpp"

namespace linecap {

// The figures that ask a capture volume's file system (statvfs of each directory, the
// holds listed under the first), taken every `period` on a thread of their own. A volume
// whose device stalls (or whose directory a stalled create holds locked) blocks that
// thread, not the control thread: the metrics, readiness and the systemd watchdog go on,
// and the figures stay as they were at the last answer.
struct StoreFigures {
    std::optional<FilesystemUsage> output;               // views.output_directory
    std::vector<std::optional<FilesystemUsage>> volumes;  // views.volumes, in order
    std::optional<std::pair<size_t, uint64_t>> holds;     // unexpired holds, their bytes
};
class StoreFiguresSampler {
public:
    // The first take() starts at once.
    StoreFiguresSampler(std::function<StoreFigures()> take, std::chrono::milliseconds period);
    ~StoreFiguresSampler();  // waits for a take() under way
    StoreFiguresSampler(const StoreFiguresSampler&) = delete;
    StoreFiguresSampler& operator=(const StoreFiguresSampler&) = delete;

    // The figures of the last take() that ended; never waits, but for the first take
    // (at most kFirstWait), so the first collection has them.
    StoreFigures get();
    static constexpr std::chrono::milliseconds kFirstWait{250};

private:
    void run();

    const std::function<StoreFigures()> take_;
    const std::chrono::milliseconds period_;
    std::mutex mutex_;
    std::condition_variable changed_;
    bool stopping_ = false;
    bool taken_ = false;  // a take() has ended
    StoreFigures last_;
    std::thread thread_;  // last: starts once the rest is in place
};

class MetricsCollector final : public prometheus::Collectable {
public:
    MetricsCollector(CaptureViews views, std::unique_ptr<PortStatsSource> port_stats,
                     FilesystemProbe filesystem = read_filesystem_usage,
                     BuildInfo build = current_build_info());

    // Control thread only (not thread-safe against itself).
    void collect();

    // Any thread.
    std::vector<prometheus::MetricFamily> Collect() const override;
    Readiness readiness() const;
    MetricsSnapshot snapshot() const;

private:
    // Per worker, the counters at the previous collect(): ratios are over the interval.
    struct WorkerHistory {
        uint64_t busy_cycles = 0;
        uint64_t total_cycles = 0;
        uint64_t packets = 0;
    };
    // Per port: reset-proof totals, and the identity (asked once).
    struct PortHistory {
        MonotonicCounter ipackets, ibytes, imissed, ierrors, rx_nombuf, xsk_fill_empty, xsk_ring_full;
        // The split of imissed (see sample_port): exported as fill-ring drops, and the rest.
        uint64_t fill_empty_part = 0;
        uint64_t missed_rest = 0;
        std::optional<PortIdentity> identity;
    };

    StreamSample sample_stream(const StreamView& view) const;
    PortSample sample_port(const PortView& view, PortHistory& history);
    WorkerSample sample_worker(const WorkerView& view, WorkerHistory& history) const;
    bool all_workers_polling() const;

    const CaptureViews views_;
    const std::unique_ptr<PortStatsSource> port_stats_;
    const FilesystemProbe filesystem_;
    const BuildInfo build_;
    StoreFiguresSampler store_figures_;
    std::vector<WorkerHistory> worker_history_;
    std::vector<PortHistory> port_history_;

    mutable std::mutex mutex_;      // guards published_
    MetricsSnapshot published_;
};

}  // namespace linecap
