// The daemon's indexer: builds the retrieval index (index_format.hpp) of every capture
// file the writer finishes, on a thread of its own — never on a capture core, and not on
// the writer thread either.
//
// Why after the file is finished rather than block by block on the writer thread: the
// writer is what limits capture into files at small frames (bench/index_cost measures
// both on the same data), so every cycle spent indexing there is capture capacity lost,
// while a finished file is usually still in the page cache and costs one extra
// sequential read (with output.o_direct it is read from the disk, at idle I/O priority).
// The thread runs at idle CPU and I/O priority (SCHED_IDLE, IOPRIO_CLASS_IDLE): when the
// control core is saturated by the writer, indexing waits instead of slowing capture,
// and catches up when traffic drops. `linecap extract` scans the files it has not got to.
//
// Order of work: files finished during this run first (newest data, still cached), then
// the files found unindexed (or with a stale/damaged index) in the directory at start —
// recovered files, files from before indexing was enabled. Queued files are bounded
// (max_queued); beyond that a file is counted as skipped and left to `linecap index`.
//
// An index is written atomically beside its file (NAME.pcap.idx). Retention may delete
// the capture file while it is being indexed: the index is renamed into place first and
// the capture file checked afterwards, so either retention sees (and deletes) the index
// too, or the indexer sees the file gone and removes the index itself — no orphans.
//
// stop(): finishes the file in hand, then the files finished during this run for up to
// `drain_limit`; whatever is left is found by the next start's sweep.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "util/background_service.hpp"
#include "util/counter.hpp"
#include "util/metric.hpp"

namespace linecap {

// Written by the indexer thread, read by metrics (relaxed).
// Counter is std::atomic for the indexer's live counters, uint64_t for a snapshot
// (IndexingCounts; util/counter.hpp).
template <class Counter>
struct IndexingCountersOf {
    Counter built_files{};
    Counter failed_files{};    // could not be read or the index not written
    Counter skipped_files{};   // queue full: left to `linecap index`
    Counter queued_files{};    // waiting now (gauge)
    Counter pcap_bytes{};      // of the files indexed
    Counter index_bytes{};     // of the indexes written
    Counter busy_ns{};         // wall time spent building

    template <class F, class... Group>
    static void fields(F&& f, Group&... g) {
        f(g.built_files...);
        f(g.failed_files...);
        f(g.skipped_files...);
        f(g.queued_files...);
        f(g.pcap_bytes...);
        f(g.index_bytes...);
        f(g.busy_ns...);
    }
};
struct IndexingCounters : IndexingCountersOf<std::atomic<uint64_t>> {};
using IndexingCounts = IndexingCountersOf<uint64_t>;

// The metrics read from IndexingCounts (only with output.index on). The queue is what
// an operator watches: it grows while the writer keeps the control core busy and shrinks
// when traffic drops.
inline constexpr FamilyMetric<IndexingCounts, 3> kIndexFilesMetric{
    {"linecap_index_files_total",
     "Finished capture files the background indexer handled, by result: built, failed (logged), skipped (queue "
     "full; run linecap index).",
     MetricType::counter},
    "result",
    {{"built", &IndexingCounts::built_files},
     {"failed", &IndexingCounts::failed_files},
     {"skipped", &IndexingCounts::skipped_files}}};
inline constexpr FieldMetric<IndexingCounts> kIndexQueuedFilesMetric{
    {"linecap_index_queued_files", "Finished capture files waiting to be indexed.", MetricType::gauge},
    &IndexingCounts::queued_files};
inline constexpr FieldMetric<IndexingCounts> kIndexSourceBytesMetric{
    {"linecap_index_source_bytes_total", "Bytes of capture files indexed.", MetricType::counter},
    &IndexingCounts::pcap_bytes};
inline constexpr FieldMetric<IndexingCounts> kIndexBytesMetric{
    {"linecap_index_bytes_total", "Bytes of index files written.", MetricType::counter}, &IndexingCounts::index_bytes};
inline constexpr FieldMetric<IndexingCounts> kIndexBusySecondsMetric{
    {"linecap_index_busy_seconds_total", "Wall time the indexer spent building indexes (at idle priority).",
     MetricType::counter},
    &IndexingCounts::busy_ns,
    1e9};

struct IndexServiceOptions {
    std::string directory;
    std::string file_template;                // output.file_template, to find the files at start
    bool sweep_at_start = true;               // index what the directory holds unindexed
    std::chrono::milliseconds drain_limit = kStopDrainBudget;
    bool idle_priority = true;                // SCHED_IDLE + idle I/O class (tests may turn it off)
    size_t max_queued = 65536;                // a few MB of names at most
};

class IndexService final : public BackgroundService {
public:
    // `indexed(name, index_bytes)` is called on the indexer thread after an index was
    // written and its capture file is still there (retention counts the sidecar).
    using IndexedHook = std::function<void(const std::string& name, uint64_t index_bytes)>;

    // The thread (lc-indexer) indexes the files finished during this run first, then
    // those found unindexed at start; stop() lets it index this run's files for up to
    // drain_limit.
    IndexService(IndexServiceOptions options, IndexedHook indexed, IndexingCounters& counters);
    ~IndexService();

    // Any thread (the writer): `name` (in the directory) was finished. Takes a lock for a
    // push; never waits for indexing.
    void file_finished(const std::string& name);

    // Blocks until nothing is queued and nothing is being indexed (tests, benchmarks).
    // Returns false on timeout.
    bool wait_idle(std::chrono::milliseconds timeout);

private:
    void work() override;
    void on_stop() override;
    void after_stop() override;
    void sweep();
    bool next(std::string& name);  // false: stop now
    void index_one(const std::string& name);
    void publish_queued();

    const IndexServiceOptions options_;
    const IndexedHook indexed_;
    IndexingCounters& counters_;

    // Shared with the writer and stop(), under mutex_: held for a push or a swap only.
    std::condition_variable idle_cv_;
    std::vector<std::string> inbox_;   // finished files not yet taken by the indexer
    bool idle_ = false;                // nothing queued, nothing in hand (after the sweep)
    std::chrono::steady_clock::time_point drain_deadline_{};
    std::atomic<size_t> queued_{0};    // fresh_ + backlog_, for the bound in file_finished

    // The indexer thread's own.
    std::deque<std::string> fresh_;    // finished during this run
    std::deque<std::string> backlog_;  // found unindexed at start
};

}  // namespace linecap
