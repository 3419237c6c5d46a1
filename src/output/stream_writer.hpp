// StreamWriter: everything the writer does for one stream (one port queue): turns the
// stream's full blocks into capture files — opening a file named after its first packet,
// rotating on size, finalising on the worker's rotation mark, periodic fsync — and
// counts what reached a file or why it did not. When a file is finished it also writes
// the pcapng statistics block (pcapng format), marks the file's manifest pending and hands
// it to the ManifestHasher (output.manifest), which reads the file back and writes it; it
// tells retention itself; on a full disk it asks retention for room.
//
// The span of a file, for its statistics: from the moment the stream's previous file was
// finished (or the writer started) to the moment this one is. Packets, drops by the
// writer (write_error, disk_full) and the file's time range are exact; the worker's
// writer_full and filtered counts are read when the file is finished, so a drop or a
// filtered packet within a few milliseconds of a rotation may be told to the next file.
// Over all files of a stream the spans add up to everything the stream saw.
//
// Several volumes: a stream has one StreamWriter per volume (each with the volume's
// WriterContext), all sharing the stream's counters and file sequence. Each is called by
// one writer thread only, the volume's thread for the stream (writer.cpp), and only while
// that thread owns the stream — except finish(), which the volume's thread may call for a
// file left open there after the stream moved away (only files_finalised, added with
// fetch_add, is shared with the stream's new writer then).
//
// Owned and called by exactly one writer thread; only the counters are read elsewhere.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "archive/manifest.hpp"
#include "config/config.hpp"
#include "output/block.hpp"
#include "output/capture_file.hpp"
#include "output/stream.hpp"
#include "output/writer.hpp"

namespace linecap {

class ManifestHasher;
class RetentionService;

// What all streams of a writer share. Read-only after Writer::create except for the
// atomics.
struct WriterContext {
    OutputConfig config;                     // directory and retention: the volume's
    FileTemplate file_template;              // config.file_template, compiled
    int dir_fd = -1;                         // the output directory, for *at() calls
    WriteLatency* latency = nullptr;
    std::atomic<bool>* direct_io_warned = nullptr;  // one warning per writer, not per file
    RetentionService* retention = nullptr;   // null: no retention (unit tests)
    ManifestHasher* hasher = nullptr;        // null: no manifests (output.manifest false)
    std::string run_id;                      // this run of the writer, for manifests
    uint64_t run_start_ns = 0;               // UTC ns: where the first span starts
    uint64_t room_bytes = 0;                 // free space to ask retention for on ENOSPC
    VolumeCounters* volume = nullptr;        // the volume's counters; null: none kept
    const VolumeFault* fault = nullptr;      // test seam; null: none
    // Called on the writer thread with the name of every file finished (after retention
    // has it); must not block. Empty: nobody listens.
    std::function<void(const std::string& name)> file_finished;
};

// A run of consecutive failed writes on one stream, logged once at its start and once
// when a write succeeds again, so a full disk does not flood the log.
class LossEpisode {
public:
    // Returns true for the first loss of an episode (the caller logs the cause).
    bool add(uint64_t packets);
    // Returns the packets lost in the episode that just ended, 0 if none was running.
    uint64_t end();
    bool active() const { return active_; }

private:
    bool active_ = false;
    uint64_t lost_packets_ = 0;
};

class StreamWriter {
public:
    // `next_seq`: the stream's file counter, shared by its writers on every volume.
    StreamWriter(const WriterContext& context, uint32_t index, const StreamSpec& spec, uint32_t snaplen,
                 StreamCounters& counters, uint64_t& next_seq, AlignedBuffer direct_io_staging);
    ~StreamWriter();
    StreamWriter(const StreamWriter&) = delete;
    StreamWriter& operator=(const StreamWriter&) = delete;

    // Any thread; see Writer::set_snaplen.
    void set_snaplen(uint32_t snaplen) { snaplen_.store(snaplen, std::memory_order_release); }

    // Writes the block's records (if any) and honours its rotation mark. Never throws. The
    // block is the caller's again afterwards (the hasher reads the file, not the block).
    void process(const WriteBlock* block);
    // Periodic work: the fsync interval.
    void tick(std::chrono::steady_clock::time_point now);
    // Finalises the open file, if any (shutdown).
    void finish();

    bool has_open_file() const { return file_.is_open(); }
    // Size of the file being written (0: none), for the volume's retention. Any thread.
    uint64_t open_file_bytes() const { return open_bytes_.load(std::memory_order_relaxed); }
    // Whether the open file is that close to its rotation size that a block of `bytes`
    // would finish it: a good moment to move the stream to another volume.
    bool near_rotation(uint64_t bytes) const;
    // The stream has just moved here from another volume: the span of the next file
    // starts now (the other volume's last file counts what came before).
    void take_over();
    // A file finalise could not finish (left under its in-progress name on a failing
    // volume) waits for the volume to come back.
    bool has_left_file() const { return !left_.empty(); }
    // The volume is back (re-admitted, maybe a repaired file system mounted again): the
    // left file is finished as far as the file system kept it, with its run and sequence:
    // cut to complete records, renamed, given to the hasher and retention. What was counted
    // written but is not in it goes to the volume's lost_after_write counters (and to the
    // manifest's write_error drops). An I/O error keeps it (take_failure says so). Only
    // the volume's thread for the stream, like finish().
    void finish_left_files();
    // An error since the last call that means the volume cannot take writes (any errno
    // but a full disk, or a full disk retention has not cleared within
    // output.volume_stall_timeout_ms); 0: none.
    int take_failure() { return std::exchange(failure_, 0); }

private:
    // Counts of the current span (see the top of this file).
    struct Span {
        uint64_t start_ns = 0;
        CaptureCounts capture_at_start;
        uint64_t write_error = 0;
        uint64_t disk_full = 0;
    };
    // What the span of the file being finished counted, for its statistics and manifest.
    struct SpanCounts {
        uint64_t packets = 0;         // written to the file
        ManifestDrops drops;
        uint64_t filtered = 0;
        std::optional<ManifestFlowCap> flow_cap;  // the policies' counts in the span; absent: off
        std::optional<ManifestDedup> dedup;
        uint64_t not_accepted = 0;    // filtered or kept out by a policy: received, not drops
        uint64_t received = 0;
    };

    std::vector<uint8_t> encode_file_header(uint32_t snaplen) const;
    CaptureCounts capture_counts() const;
    // The open file's clock object (manifest) from clock_span_.
    ManifestClock file_clock() const;
    void ask_room_if_full(const IoStatus& status);
    // fsync finished files and manifests (output.fsync other than none).
    bool durable() const { return context_.config.fsync != FsyncPolicy::none; }
    // Returns whether the block's records reached the open file.
    bool write_records(const WriteBlock& block);
    bool open_file(const WriteBlock& block);
    void finalise_file();
    // The hasher lane follows the stream's files in order (finished); a file finished out of
    // that order (a left one) is given to the hasher by name (finished_unfollowed).
    enum class Followed { by_lane, not_by_lane };
    // A finished file to the counters, the hasher (its manifest), retention and the pipeline.
    void hand_over(const FinishedFile& finished, Manifest manifest, Followed followed);
    SpanCounts span_counts(const CaptureCounts& capture) const;
    struct LeftFile;
    // Returns whether it is finished (false: an I/O error, counted for the volume).
    bool finish_left(LeftFile& left);
    // What the writer knew of a file finalise left under its in-progress name.
    struct LeftFile {
        std::string final_name;
        std::string in_progress_name;
        std::vector<uint8_t> header;    // its file header, should the file system have lost it
        uint64_t size = 0;              // bytes the writer put in it
        uint64_t counted_file_bytes = 0;  // of those, counted in file_bytes (header, records)
        uint64_t packets = 0;
        uint64_t wire_bytes = 0;
        Manifest manifest;              // as it would have been, but for the digest
    };
    // pcapng: the Interface Statistics Block that closes the file.
    void append_statistics(const SpanCounts& counts, const ManifestClock& clock, uint64_t now_ns);
    // Everything but the digest, which the hasher adds.
    Manifest manifest_for(const SpanCounts& counts, const ManifestClock& clock, uint64_t size, uint64_t span_start_ns,
                          uint64_t span_end_ns) const;
    void count_lost(const WriteBlock& block, const IoStatus& status, const std::string& file_name);
    void sync_if_due(std::chrono::steady_clock::time_point now);
    // An operation on the volume failed: counted by errno, and remembered for take_failure.
    void volume_error(const IoStatus& status);
    // The test seam's failure for the next write, if any (it may sleep first).
    IoStatus injected_fault() const;
    std::string path_of(const std::string& name) const;
    void follow_snaplen();

    const WriterContext& context_;
    const uint32_t index_;                     // of the stream (WriteBlock::stream)
    const StreamId id_;
    const std::string device_;
    const std::function<CaptureCounts()> capture_counts_;
    const std::optional<ManifestFlowCap> flow_cap_;   // the stream's policies (counts 0)
    const std::optional<ManifestDedup> dedup_;
    const ManifestClock clock_;                // the stream's timestamp source
    const ClockQualityBoard* const clock_quality_;
    ClockSpan clock_span_;                     // of the open file
    const std::string label_;                  // "port p0 queue 3", for logs
    StreamCounters& counters_;
    std::atomic<uint32_t> snaplen_;            // latest, set by set_snaplen
    uint32_t header_snaplen_;                  // the largest so far: what files declare
    std::vector<uint8_t> file_header_;         // for header_snaplen_
    AlignedBuffer direct_io_staging_;

    CaptureFile file_;
    uint64_t& next_seq_;                       // the stream's, shared by its volumes' writers
    std::atomic<uint64_t> open_bytes_{0};
    uint64_t file_seq_ = 0;                    // of the open file
    uint64_t file_first_ns_ = 0;               // first and last packet in the open file
    uint64_t file_wire_bytes_ = 0;             // of the open file's packets
    uint64_t file_counted_bytes_ = 0;          // of the open file in counters_.file_bytes
    std::vector<LeftFile> left_;              // oldest first
    uint64_t file_last_ns_ = 0;
    Span span_;
    LossEpisode loss_;
    bool unsynced_ = false;
    std::chrono::steady_clock::time_point last_sync_{};
    int failure_ = 0;
    std::chrono::steady_clock::time_point full_since_{};  // of the running disk-full episode
};

}  // namespace linecap
