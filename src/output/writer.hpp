// The writer: owns every stream's blocks and files, and the thread(s) that write full
// blocks to disk, rotate on size, finalise files on the workers' rotation marks, and
// count what reached a file (or why it did not).
//
// Volumes (output.volumes; output.directory is the one-volume form, the same code): each
// volume has its directory, retention, manifest hasher and writer thread(s) of its own.
// Each stream is placed on one healthy volume at a time; a volume whose write fails (EIO,
// EROFS, …, or ENOSPC retention does not clear) or stalls (output.volume_stall_timeout_ms,
// seen by a watchdog thread) is marked failed and its streams move to the healthy ones. A
// failed volume is probed and re-admitted (writer.cpp has the hand-over protocol).
//
// Threading: workers only touch Stream rings (push full / pop free). Everything else
// here belongs to the writer thread(s); the metrics thread reads StreamCounters with
// relaxed loads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "archive/manifest.hpp"
#include "archive/manifest_hasher.hpp"  // ManifestCounters
#include "archive/retention.hpp"        // RetentionCounters
#include "config/config.hpp"
#include "output/stream.hpp"
#include "util/clock_quality.hpp"
#include "util/counter.hpp"
#include "util/metric.hpp"
#include "util/result.hpp"
#include "util/thread_priority.hpp"

namespace linecap {

// Written only by the writer thread that owns the stream; Counter is std::atomic for the
// live counters, uint64_t for a snapshot (StreamCounts; util/counter.hpp).
template <class Counter>
struct StreamCountersOf {
    Counter written_packets{};
    Counter written_bytes{};        // original (wire) length of written packets
    Counter file_bytes{};           // bytes appended to files (headers included)
    Counter write_error_packets{};  // lost to an I/O error (EIO, …)
    Counter disk_full_packets{};    // lost to ENOSPC / EDQUOT
    Counter files_finalised{};

    template <class F, class... Group>
    static void fields(F&& f, Group&... g) {
        f(g.written_packets...);
        f(g.written_bytes...);
        f(g.file_bytes...);
        f(g.write_error_packets...);
        f(g.disk_full_packets...);
        f(g.files_finalised...);
    }
};
struct alignas(64) StreamCounters : StreamCountersOf<std::atomic<uint64_t>> {};
using StreamCounts = StreamCountersOf<uint64_t>;

// The metrics read from StreamCounters (util/metric.hpp); labels port, queue.
inline constexpr FieldMetric<StreamCounts> kWrittenPacketsMetric{
    {"linecap_written_packets_total", "Packets that reached a capture file.", MetricType::counter},
    &StreamCounts::written_packets};
inline constexpr FieldMetric<StreamCounts> kWrittenBytesMetric{
    {"linecap_written_bytes_total", "Original (wire) length of the packets that reached a capture file.",
     MetricType::counter},
    &StreamCounts::written_bytes};
inline constexpr FieldMetric<StreamCounts> kFilesFinalisedMetric{
    {"linecap_files_finalised_total", "Capture files completed (synced and renamed to their final name).",
     MetricType::counter},
    &StreamCounts::files_finalised};
inline constexpr FieldMetric<StreamCounts> kOutputFileBytesMetric{
    {"linecap_output_file_bytes_total", "Bytes appended to capture files, file and record headers included.",
     MetricType::counter},
    &StreamCounts::file_bytes};
inline constexpr DropReason<StreamCounts> kWriteErrorDrop{"write_error", &StreamCounts::write_error_packets};
inline constexpr DropReason<StreamCounts> kDiskFullDrop{"disk_full", &StreamCounts::disk_full_packets};

// One capture volume's state and what was written to it or lost there (label `volume`,
// its directory). Written by the volume's writer threads and the writer's watchdog and
// probe (fetch_add: several threads), read by the metrics thread.
template <class Counter>
struct VolumeCountersOf {
    Counter healthy{};               // gauge: 1 healthy, 0 failed
    Counter streams{};               // gauge: streams placed on it
    Counter file_bytes{};            // bytes appended to files on it (headers included)
    Counter written_packets{};
    Counter write_error_packets{};   // lost there to an I/O error (reason write_error)
    Counter disk_full_packets{};     // lost there to ENOSPC / EDQUOT (reason disk_full)
    Counter errors_eio{};            // failed writes (create, write, sync, rename) by errno
    Counter errors_erofs{};
    Counter errors_enospc{};
    Counter errors_edquot{};
    Counter errors_other{};
    Counter failures{};              // times it was marked failed
    Counter stalls{};                // of those, for a write that did not return in time
    Counter failovers{};             // streams moved away from it after a failure
    Counter readmissions{};          // times a probe (or SIGHUP) found it working again
    Counter probe_failures{};
    // Counted written (in written_packets and the streams' counters), then not in the file a
    // failure kept once the volume was back: what its file system had not committed.
    Counter lost_after_write_packets{};
    Counter lost_after_write_bytes{};       // their original (wire) lengths
    Counter lost_after_write_file_bytes{};  // bytes of the file (records) gone

    template <class F, class... Group>
    static void fields(F&& f, Group&... g) {
        f(g.healthy...);
        f(g.streams...);
        f(g.file_bytes...);
        f(g.written_packets...);
        f(g.write_error_packets...);
        f(g.disk_full_packets...);
        f(g.errors_eio...);
        f(g.errors_erofs...);
        f(g.errors_enospc...);
        f(g.errors_edquot...);
        f(g.errors_other...);
        f(g.failures...);
        f(g.stalls...);
        f(g.failovers...);
        f(g.readmissions...);
        f(g.probe_failures...);
        f(g.lost_after_write_packets...);
        f(g.lost_after_write_bytes...);
        f(g.lost_after_write_file_bytes...);
    }
};
struct alignas(64) VolumeCounters : VolumeCountersOf<std::atomic<uint64_t>> {
    // A failed operation on the volume, by errno.
    void count_error(int error);
};
using VolumeCounts = VolumeCountersOf<uint64_t>;

inline constexpr FieldMetric<VolumeCounts> kVolumeHealthyMetric{
    {"linecap_volume_healthy", "1 while the capture volume takes writes, 0 while it is failed.", MetricType::gauge},
    &VolumeCounts::healthy};
inline constexpr FieldMetric<VolumeCounts> kVolumeStreamsMetric{
    {"linecap_volume_streams", "Streams (port queues) written to the capture volume now.", MetricType::gauge},
    &VolumeCounts::streams};
inline constexpr FieldMetric<VolumeCounts> kVolumeWrittenBytesMetric{
    {"linecap_volume_written_bytes_total", "Bytes appended to capture files on the volume, headers included.",
     MetricType::counter},
    &VolumeCounts::file_bytes};
inline constexpr FieldMetric<VolumeCounts> kVolumeWrittenPacketsMetric{
    {"linecap_volume_written_packets_total", "Packets that reached a capture file on the volume.",
     MetricType::counter},
    &VolumeCounts::written_packets};
inline constexpr FamilyMetric<VolumeCounts, 2> kVolumeDroppedMetric{
    {"linecap_volume_dropped_packets_total",
     "Packets lost on the volume, by reason (their sum over volumes is linecap_dropped_packets_total's).",
     MetricType::counter},
    "reason",
    {{"write_error", &VolumeCounts::write_error_packets}, {"disk_full", &VolumeCounts::disk_full_packets}}};
inline constexpr FamilyMetric<VolumeCounts, 5> kVolumeErrorsMetric{
    {"linecap_volume_write_errors_total", "Failed writes (create, write, sync, rename) on the volume, by errno.",
     MetricType::counter},
    "errno",
    {{"EIO", &VolumeCounts::errors_eio},
     {"EROFS", &VolumeCounts::errors_erofs},
     {"ENOSPC", &VolumeCounts::errors_enospc},
     {"EDQUOT", &VolumeCounts::errors_edquot},
     {"other", &VolumeCounts::errors_other}}};
inline constexpr FieldMetric<VolumeCounts> kVolumeFailuresMetric{
    {"linecap_volume_failures_total", "Times the volume was marked failed (an I/O error or a stall).",
     MetricType::counter},
    &VolumeCounts::failures};
inline constexpr FieldMetric<VolumeCounts> kVolumeStallsMetric{
    {"linecap_volume_stalls_total",
     "Times a write on the volume did not return within output.volume_stall_timeout_ms.", MetricType::counter},
    &VolumeCounts::stalls};
inline constexpr FieldMetric<VolumeCounts> kVolumeFailoversMetric{
    {"linecap_volume_failovers_total", "Streams moved away from the volume because it failed.", MetricType::counter},
    &VolumeCounts::failovers};
inline constexpr FieldMetric<VolumeCounts> kVolumeReadmissionsMetric{
    {"linecap_volume_readmissions_total", "Times the failed volume was found working again and re-admitted.",
     MetricType::counter},
    &VolumeCounts::readmissions};

inline constexpr FieldMetric<VolumeCounts> kVolumeProbeFailuresMetric{
    {"linecap_volume_probe_failures_total", "Probes of the failed volume that found it still not working.",
     MetricType::counter},
    &VolumeCounts::probe_failures};

inline constexpr FieldMetric<VolumeCounts> kVolumeLostAfterWritePacketsMetric{
    {"linecap_volume_lost_after_write_packets_total",
     "Packets counted written on the volume that the file a failure kept no longer held once the volume was back "
     "(its file system had not committed them).",
     MetricType::counter},
    &VolumeCounts::lost_after_write_packets};
inline constexpr FieldMetric<VolumeCounts> kVolumeLostAfterWriteBytesMetric{
    {"linecap_volume_lost_after_write_bytes_total",
     "Original (wire) length of linecap_volume_lost_after_write_packets_total.", MetricType::counter},
    &VolumeCounts::lost_after_write_bytes};
inline constexpr FieldMetric<VolumeCounts> kVolumeLostAfterWriteFileBytesMetric{
    {"linecap_volume_lost_after_write_file_bytes_total",
     "Bytes counted in linecap_output_file_bytes_total that the file a failure kept no longer held once the volume "
     "was back.",
     MetricType::counter},
    &VolumeCounts::lost_after_write_file_bytes};

// A test seam: makes the volume's writes fail with `error` (0: off) or sleep `stall_ms`
// first, as a failing or stalled device would. Checked once per block written.
struct VolumeFault {
    std::atomic<int> error{0};
    std::atomic<uint32_t> stall_ms{0};
};

// The writer's backlog (Writer::backlog_blocks), unlabelled.
inline constexpr MetricDecl kWriterBacklogMetric{"linecap_writer_backlog_blocks",
                                                 "Full write blocks waiting for the writer, all streams.",
                                                 MetricType::gauge};

// Write latency histogram (per write syscall), cumulative-free buckets; upper bounds in µs.
struct WriteLatency {
    static constexpr uint64_t kBoundsUs[] = {10, 50, 100, 500, 1000, 5000, 10000, 50000, 100000, 1000000};
    static constexpr size_t kBuckets = sizeof(kBoundsUs) / sizeof(kBoundsUs[0]) + 1;  // + overflow
    std::atomic<uint64_t> bucket[kBuckets]{};
    std::atomic<uint64_t> sum_ns{0};
    std::atomic<uint64_t> count{0};

    // One write. Several writer threads share the histogram, hence fetch_add. A bucket
    // counts writes with elapsed <= its bound (Prometheus "le"), the last one the rest.
    void record(std::chrono::nanoseconds elapsed) {
        const uint64_t ns = static_cast<uint64_t>(elapsed.count() > 0 ? elapsed.count() : 0);
        size_t i = 0;
        while (i < kBuckets - 1 && ns > kBoundsUs[i] * 1000) ++i;
        bucket[i].fetch_add(1, std::memory_order_relaxed);
        sum_ns.fetch_add(ns, std::memory_order_relaxed);
        count.fetch_add(1, std::memory_order_relaxed);
    }
};

// Exported as a histogram: cumulative buckets with `le` in seconds, +Inf, _sum, _count.
inline constexpr MetricDecl kWriteLatencyMetric{"linecap_write_latency_seconds",
                                                "Duration of the writer's write syscalls.", MetricType::histogram};

// Where block memory comes from: hugepages (rte_malloc_socket) in the daemon, the heap
// in unit tests. `socket` is the NUMA socket of the worker that fills the stream.
struct BlockMemory {
    std::function<void*(size_t bytes, size_t align, int socket)> allocate;
    std::function<void(void*)> release;
};
BlockMemory heap_block_memory();

// What the worker counts for a stream, as the writer needs it for the statistics of a
// file's span (pcapng ISB, manifest). A function rather than a pointer to the worker's
// counters so that output does not depend on capture; it is called on the writer thread
// when a file is finished (relaxed loads of the worker's counters).
struct CaptureCounts {
    uint64_t filtered_packets = 0;
    uint64_t writer_full_packets = 0;
    uint64_t flow_cap_cut_packets = 0;      // capture.flow_cap: written shortened
    uint64_t flow_cap_dropped_packets = 0;  // capture.flow_cap: not written
    uint64_t dedup_packets = 0;             // capture.dedup: copies not written
};

struct StreamSpec {
    StreamId id;
    int socket = 0;            // NUMA socket of the filling worker
    uint32_t snaplen = 262144;
    std::string device;        // the port's device (pcapng if_description)
    std::function<CaptureCounts()> capture_counts;  // empty: the worker counts nothing
    // The capture policies that applied to the stream (counts 0), for the files' pcapng
    // statistics and manifests; absent: off.
    std::optional<ManifestFlowCap> flow_cap;
    std::optional<ManifestDedup> dedup;
    // Where the stream's stamps come from (clock.source and port_clock; the rest is
    // filled per file), and the host clock's quality to fold into each file's span
    // (null: not known, recorded as "unknown").
    ManifestClock clock;
    const ClockQualityBoard* clock_quality = nullptr;
};

class Writer {
public:
    static Result<std::unique_ptr<Writer>> create(const OutputConfig& config,
                                                  std::vector<StreamSpec> streams,
                                                  BlockMemory memory);
    ~Writer();
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

    size_t stream_count() const;
    Stream& stream(size_t index);
    const StreamCounters& counters(size_t index) const;
    const WriteLatency& latency() const;
    // Volume 0's (the one volume of output.directory); volume_retention() for the others.
    const RetentionCounters& retention() const;
    // Volume 0's manifest hasher's counters; null when output.manifest is off.
    const ManifestCounters* manifest() const;
    size_t backlog_blocks() const;   // full blocks waiting, all streams

    // A stream's snap length changed (configuration reload). Any thread; call it before
    // the workers start using the new snap length. A raise finalises the stream's open
    // file before the next block is written, so no file holds a record longer than its
    // header's snaplen; new files declare the largest snap length the stream has had
    // (blocks from before a cut may still be in flight). Stream::snaplen is not updated.
    void set_snaplen(size_t index, uint32_t snaplen);

    // The capture volumes, in configuration order (one: output.directory).
    size_t volume_count() const;
    const std::string& volume_directory(size_t volume) const;
    const VolumeCounters& volume_counters(size_t volume) const;
    const RetentionCounters& volume_retention(size_t volume) const;
    // Null when output.manifest is off.
    const ManifestCounters* volume_manifest(size_t volume) const;
    // The volume a stream is placed on now.
    size_t stream_volume(size_t index) const;
    // Probes every failed volume now (SIGHUP) instead of at its next probe interval. Any
    // thread; returns at once.
    void probe_failed_volumes();
    // Test seam (VolumeFault); null for a volume out of range.
    VolumeFault* volume_fault(size_t volume);

    // `hook(volume, name)` is called on a writer thread for every file finished (name
    // within the volume's directory), after retention has it (and before its manifest,
    // which may be pending); it must not block. Call before start().
    using FileFinishedHook = std::function<void(size_t volume, const std::string& name)>;
    void on_file_finished(FileFinishedHook hook);
    // `hook(stream, block)` is called on a writer thread with every block once it is
    // written (or counted lost), before the block goes back to the worker: it must not
    // block or keep the block. Call before start().
    using BlockWrittenHook = std::function<void(const Stream& stream, const WriteBlock& block)>;
    void on_block_written(BlockWrittenHook hook);
    // A sidecar of the finished file `name` on `volume` (an index) was written or replaced
    // after the file was finished: retention re-reads its size. Any thread.
    void sidecar_changed(size_t volume, const std::string& name);

    // Starts the writer thread(s), each moved to `placement` before it writes anything (an
    // error there stops them all and is returned).
    Status start(const ThreadPlacement& placement = {});
    // Call after every worker has stopped and pushed its last (partial) block: writes
    // everything queued, finalises every open file, joins the thread(s).
    void stop();

private:
    struct Impl;
    explicit Writer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace linecap
