// The writer: owns every stream's blocks and files, and the thread(s) that write full
// blocks to disk, rotate on size, finalise files on the workers' rotation marks, and
// count what reached a file (or why it did not).
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
#include <string>
#include <vector>

#include "config/config.hpp"
#include "output/stream.hpp"
#include "util/result.hpp"

namespace linecap {

// Written only by the writer thread that owns the stream.
struct alignas(64) StreamCounters {
    std::atomic<uint64_t> written_packets{0};
    std::atomic<uint64_t> written_bytes{0};        // original (wire) length of written packets
    std::atomic<uint64_t> file_bytes{0};           // bytes appended to files (headers included)
    std::atomic<uint64_t> write_error_packets{0};  // lost to an I/O error (EIO, …)
    std::atomic<uint64_t> disk_full_packets{0};    // lost to ENOSPC / EDQUOT
    std::atomic<uint64_t> files_finalised{0};
    std::atomic<uint64_t> open_file_bytes{0};      // size of the file being written (0: none)
};

// Retention (output/retention.hpp), written by the retention thread, read by metrics.
struct RetentionCounters {
    std::atomic<uint64_t> oldest_packet_ns{0};     // first packet of the oldest kept file; 0 = none
    std::atomic<uint64_t> files{0};                // finished capture files kept
    std::atomic<uint64_t> bytes{0};                // their bytes, sidecars included
    std::atomic<uint64_t> held_files{0};           // of those, on the legal hold list
    std::atomic<uint64_t> deleted_files{0};
    std::atomic<uint64_t> deleted_bytes{0};
    std::atomic<uint64_t> budget_unmet{0};         // 1 while a limit cannot be met
};

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
};

struct StreamSpec {
    StreamId id;
    int socket = 0;            // NUMA socket of the filling worker
    uint32_t snaplen = 262144;
    std::string device;        // the port's device (pcapng if_description)
    std::function<CaptureCounts()> capture_counts;  // empty: the worker counts nothing
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
    const RetentionCounters& retention() const;
    size_t backlog_blocks() const;   // full blocks waiting, all streams

    // A stream's snap length changed (configuration reload). Any thread; call it before
    // the workers start using the new snap length. A raise finalises the stream's open
    // file before the next block is written, so no file holds a record longer than its
    // header's snaplen; new files declare the largest snap length the stream has had
    // (blocks from before a cut may still be in flight). Stream::snaplen is not updated.
    void set_snaplen(size_t index, uint32_t snaplen);

    // `hook(name)` is called on a writer thread for every file finished, after retention
    // has it; it must not block. Call before start().
    void on_file_finished(std::function<void(const std::string& name)> hook);
    // A sidecar of the finished file `name` (an index) was written or replaced after the
    // file was finished: retention re-reads its size. Any thread.
    void sidecar_changed(const std::string& name);

    Status start();
    // Call after every worker has stopped and pushed its last (partial) block: writes
    // everything queued, finalises every open file, joins the thread(s).
    void stop();

private:
    struct Impl;
    explicit Writer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace linecap
