// ManifestHasher: the SHA-256 of every capture file, computed by reading the file back on a
// thread of its own at idle CPU and I/O priority, and the file's manifest written once the
// file is finished and completely hashed.
//
// Why not on the writer thread, and why not from the blocks in memory: SHA-256 runs at about
// 1.4 GB/s per core (SHA-NI) against 3–4 GB/s for a write into warm memory, so hashing at
// the writer's pace cannot keep up on the one control core the writer shares with everything
// else. Nor may the hasher hold a block until it has hashed it: one that falls behind would
// run the workers out of free blocks (writer_full drops). So capture comes first and
// bookkeeping waits, as for the indexer: the writer gives every block straight back to its
// free ring, and this thread reads the file's bytes back with pread (from its own
// descriptor, opened when the file is, so a rename or retention's unlink changes nothing),
// following the writer closely enough that the bytes are still in the page cache. With output.o_direct they come from the disk, at idle I/O
// priority.
//
// "Manifest pending": a finished file whose manifest is not written yet. The writer creates
// an empty marker NAME.manifest-pending (layout::manifest_pending_name) before it renames the
// file to its final name; this thread removes it after the manifest is in place. So at every
// moment a finished file of a daemon with manifests on has its manifest or its marker (a
// crash cannot change that), and `linecapd verify`, `linecap stats` and the scrub report a
// pending file as pending, not as one without manifest. Retention knows the file from the
// moment it is finished (its budgets stay exact) and may delete it while it is pending, like
// any other oldest file: the manifest is written before the capture file is checked, and
// removed again if the file is gone meanwhile, so no manifest outlives its file.
//
// The guarantee: a finished file's manifest matches its bytes. Only bytes that reached the
// file (a failed append is cut off before the writer says how far the file goes) are hashed,
// and a byte of the file is never rewritten once counted. A file the writer abandons (left
// under its in-progress name for recovery, or discarded) is dropped here; recovery writes
// its manifest at the next start.
//
// Bounds: a descriptor is held for the file being written (closed by the writer when it is
// finished) and for the file being hashed, so at most two per stream: a finished file waiting
// its turn is reopened by name (and known by its inode), and one retention deletes meanwhile
// frees its space at once instead of being kept alive by a descriptor. At most kTrackedFiles
// files per stream are followed; a file finished while its stream has that many waiting still
// gets its marker and is hashed by name (like the files of a previous run) once the backlog
// is worked off. So memory and descriptors are bounded, nothing is forgotten, and the writer
// never waits for this thread — not on a lock either (a lock held by an idle-priority thread
// could keep the writer waiting for as long as the machine is busy).
//
// Stop: the backlog is read and hashed at normal priority for up to
// HasherContext::stop_budget (a file read through by then is completed); every file left
// then gets the writer's manifest without its digest written into its
// marker (a draft), so a stop is short whatever the backlog and loses nothing.
// Start: the files a previous run left pending are hashed by name; a marker holding a
// draft gives its manifest everything but the digest, exactly as the writer recorded it.
// An empty marker (a kill -9) or one that does not hold a draft of that file gives a
// manifest from the bytes alone ("recovered": true: their drops, span and sequence were in
// the dead daemon's memory).
//
// Threading: opened/appended/finished/abandoned are called by the writer thread that owns
// the stream (one producer per stream ring); everything else runs on this thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "archive/manifest.hpp"
#include "archive/retention.hpp"
#include "util/sha256.hpp"
#include "util/spsc_ring.hpp"
#include "util/unique_fd.hpp"
#include "util/background_service.hpp"
#include "util/counter.hpp"
#include "util/metric.hpp"
#include "util/result.hpp"

namespace linecap {

// The manifest hasher's counters: what it still has to read back and
// hash. Written by the writer threads and the hasher, read by metrics (relaxed); a
// snapshot is ManifestCounts.
template <class Counter>
struct ManifestCountersOf {
    Counter backlog_bytes{};   // bytes in capture files not hashed yet
    Counter backlog_files{};   // finished files whose manifest is pending
    Counter hashed_bytes{};
    Counter written_files{};   // manifests written
    Counter failed_files{};    // no manifest: the file could not be read back
    Counter deleted_files{};   // deleted (retention) before their manifest was due

    template <class F, class... Group>
    static void fields(F&& f, Group&... g) {
        f(g.backlog_bytes...);
        f(g.backlog_files...);
        f(g.hashed_bytes...);
        f(g.written_files...);
        f(g.failed_files...);
        f(g.deleted_files...);
    }
};
struct ManifestCounters : ManifestCountersOf<std::atomic<uint64_t>> {};
using ManifestCounts = ManifestCountersOf<uint64_t>;

// The metrics read from ManifestCounts, unlabelled (only with output.manifest). The two
// backlogs are gauges moved by two threads' fetch_add/fetch_sub: never negative, since
// the bytes are counted in before the hasher can count them out.
inline constexpr FieldMetric<ManifestCounts> kManifestBacklogBytesMetric{
    {"linecap_manifest_backlog_bytes",
     "Bytes written to capture files that the manifest hasher has not hashed yet (it runs at idle priority).",
     MetricType::gauge},
    &ManifestCounts::backlog_bytes};
inline constexpr FieldMetric<ManifestCounts> kManifestBacklogFilesMetric{
    {"linecap_manifest_backlog_files",
     "Finished capture files whose manifest is pending (NAME.manifest-pending beside them).", MetricType::gauge},
    &ManifestCounts::backlog_files};
inline constexpr FieldMetric<ManifestCounts> kManifestHashedBytesMetric{
    {"linecap_manifest_hashed_bytes_total",
     "Bytes of capture files hashed for their manifests (rate: the hash rate).", MetricType::counter},
    &ManifestCounts::hashed_bytes};
inline constexpr FamilyMetric<ManifestCounts, 3> kManifestFilesMetric{
    {"linecap_manifest_files_total",
     "Finished capture files by what became of their pending manifest: written, failed (the file could not be read "
     "back), deleted (retention removed the file first).",
     MetricType::counter},
    "result",
    {{"written", &ManifestCounts::written_files},
     {"failed", &ManifestCounts::failed_files},
     {"deleted", &ManifestCounts::deleted_files}}};

// What the hasher needs of the writer: the output directory, and the retention it asks
// for room on a full disk and tells of every manifest written.
struct HasherContext {
    OutputConfig config;
    int dir_fd = -1;
    RetentionService* retention = nullptr;  // null: no retention (unit tests)
    uint64_t room_bytes = 0;                // free space to ask retention for on ENOSPC
    std::chrono::milliseconds stop_budget = kStopDrainBudget;  // hashing once capture has stopped
};

class ManifestHasher final : public BackgroundService {
public:
    static constexpr size_t kTrackedFiles = 256;  // per stream, followed at most (~1 KiB each)

    ManifestHasher(HasherContext context, size_t streams, ManifestCounters& counters);
    ~ManifestHasher();  // stop()

    // Queues the files a previous run left pending (a directory listing; call it before the
    // writer threads start), then starts the thread (lc-hash).
    Status start();
    // stop() works off the backlog (at normal priority, for up to the stop budget), leaves
    // drafts in the markers of the files left, then joins. Without start() that runs on
    // the calling thread.

    // Writer side, the thread owning `stream`, in file order. Never blocks.
    // A new file was created as `in_progress_name` (its header is in it: `size` bytes).
    void opened(uint32_t stream, const std::string& in_progress_name, uint64_t size);
    void appended(uint32_t stream, uint64_t size);  // the open file now holds `size` bytes
    // Before the rename: creates the pending marker for the final name. Returns whether it
    // exists (logged otherwise; the file is then hashed, but a crash would leave it without
    // either).
    bool mark_pending(const std::string& final_name);
    void unmark_pending(const std::string& final_name);  // the rename failed
    // The open file has its final name; `manifest` lacks only the digest.
    void finished(uint32_t stream, Manifest manifest);
    void abandoned(uint32_t stream);  // the open file was not finished
    // A file finished without being followed (one a failed volume kept, finished once the
    // volume is back): hashed by name. Any writer thread; takes a lock.
    void finished_unfollowed(Manifest manifest);
    // Any thread. The directory came back after failing (a capture volume re-admitted):
    // once idle, the hasher looks for files left with their manifest pending as start()
    // does — a file system repaired and mounted again holds what it last committed. A file
    // the hasher still follows is not one of them, even when its marker is there and its
    // manifest not yet: the writer may have just renamed it, and its manifest, with run and
    // sequence, is on its way through the lane.
    void rescan() { rescan_.store(true, std::memory_order_release); }
    bool rescan_pending() const { return rescan_.load(std::memory_order_acquire); }  // for tests

private:
    // One capture file being followed. The writer fills it until `state` leaves `open`
    // (release), then never touches it again; this thread owns it from the ring on.
    struct Tracked {
        enum State : int { open, finished, abandoned };
        ~Tracked() { UniqueFd closed(handoff.exchange(-1)); }
        // The read side, opened by the writer: taken by whoever comes first, this thread to
        // read (it is following the open file) or the writer when the file is finished (it
        // closes it: a file waiting its turn is reopened by name, known by its inode).
        std::atomic<int> handoff{-1};
        std::string in_progress_name;       // set before it is queued, never changed
        dev_t dev = 0;
        ino_t ino = 0;
        std::atomic<uint64_t> written{0};   // bytes in the file (release after each append)
        std::atomic<int> state{open};
        Manifest manifest;                  // when finished: all but the digest
        // This thread's:
        UniqueFd fd;
        Sha256 hash;
        uint64_t hashed = 0;
        bool failed = false;                // could not be read back: no manifest
    };
    struct Lane {  // one stream
        explicit Lane(size_t capacity) : ring(capacity) {}
        SpscRing<Tracked> ring;
        Tracked* writing = nullptr;         // the writer's: the open file it follows (or null)
        Tracked* current = nullptr;         // this thread's: the file being hashed
        uint64_t reported = 0;              // the writer's: bytes of `writing` counted in backlog
    };

    // A finished file hashed by name: left pending by a previous run (its manifest is
    // computed from the file alone) or finished while its stream had kTrackedFiles waiting.
    struct ByName {
        Manifest manifest;                  // file and size; the rest too unless from_file
        bool from_file = false;
    };

    void before_start() override { sweep("by the previous run"); }
    void work() override { run(); }
    void stop_unstarted() override { run(); }
    void run();                             // on the thread, or on stop()'s caller without start()
    bool work_round();                      // one chunk per stream; false when nothing was done
    bool advance(Lane& lane);
    bool hash_by_name();                    // one whole file of by_name_
    void sweep(const char* by);             // queues the files left pending (`by`: by whom, for the log)
    size_t leave_drafts();                  // at stop: every file not hashed yet; how many
    bool followed(const std::string& final_name);  // a lane, by_name_ or untracked_ has it
    void complete(Manifest manifest);       // writes it (or queues a retry)
    void written(const std::string& name);  // its manifest is in place
    // Why a followed file gets no manifest: the writer abandoned it (it never was finished),
    // it could not be read back, or retention deleted it first.
    enum class Gone { abandoned, failed, deleted };
    void drop(Tracked* file, Gone why);
    enum class Open { ready, wait, gone, failed };
    Open open_to_read(Tracked& file, int state);
    void retry_unwritten(std::chrono::steady_clock::time_point now);
    std::string path_of(const std::string& name) const;

    const HasherContext context_;
    ManifestCounters& counters_;
    std::vector<std::unique_ptr<Lane>> lanes_;
    std::vector<uint8_t> buffer_;           // the read-back chunk
    std::deque<ByName> by_name_;            // this thread's
    std::mutex untracked_mutex_;
    std::vector<Manifest> untracked_;       // finished without being followed (writer → here)
    std::vector<Manifest> unwritten_;       // manifests that could not be written yet
    std::atomic<bool> rescan_{false};
    std::chrono::steady_clock::time_point last_retry_{};
    // No more reading from then on: set at stop, to the end of the stop budget.
    std::chrono::steady_clock::time_point read_deadline_ = std::chrono::steady_clock::time_point::max();
};

}  // namespace linecap
