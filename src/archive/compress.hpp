// Compression of finished capture files (output.compress): NAME.pcap is replaced by
// NAME.pcap.zst, zstd's seekable format (format/zstd_seekable.hpp) — a standard zstd
// stream (`zstd -d` gives back the exact pcap bytes) of independent frames cut at the
// retrieval index's block boundaries, so an indexed query decompresses only the blocks
// it reads. Everything that reads capture files reads the compressed form through the
// same reader (archive/store_inventory.hpp's StoreBackend::open), and answers with plain
// pcap.
//
// Why after the file is finished, on a thread of its own at idle CPU and I/O priority,
// and never on the writer's path: compression costs several times what writing does
// (bench/compress), and a capture core or the writer must never wait for it. Files are
// compressed once they are older than output.compress.after (recent files are the ones
// queries read, and the index must exist first so frames can follow its blocks).
//
// The steps, and what a kill at any point leaves (startup recovery, archive/recovery.hpp,
// undoes the ones marked *):
//   1. the pcap is read and compressed into a hidden temporary (layout::AtomicFile,
//      ".NAME.pcap.zst.tmp.XXXXXX"; a kill leaves the temporary: removed at start), its
//      bytes hashed on the way: a file whose bytes no longer match its manifest is not
//      compressed (the scrub marks it);
//   2. the temporary gets the pcap's mtime (indexes compare it), is read back and
//      decompressed, and must give exactly the manifest's size and SHA-256;
//   3. it is fsynced and renamed to NAME.pcap.zst, the directory fsynced *;
//   4. the manifest gets "compressed": the .zst's size and SHA-256 (atomically) *;
//   5. the index is rewritten unchanged, so it is newer than the .zst's ctime (an index
//      older than its file's ctime is stale: archive/index_format.hpp);
//   6. NAME.pcap is deleted and the directory fsynced.
// Until step 6 the plain file is what every reader uses; a kill before it leaves both,
// and recovery removes the .zst (and the manifest's "compressed"). Nothing is lost at any
// step: the plain file goes only once a durable, verified compressed copy exists.
//
// Retention may delete the file while it is compressed: it deletes NAME.pcap.zst with
// NAME.pcap (layout::sidecar_names); if the plain file is gone when step 6 comes, the
// compressor removes what it made.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>

#include "archive/store_inventory.hpp"
#include "util/background_service.hpp"
#include "util/counter.hpp"
#include "util/metric.hpp"
#include "util/result.hpp"

namespace linecap {

inline constexpr int kDefaultCompressLevel = 3;
// Frames are cut at index blocks, and never larger than this (a block is ~256 KiB; a
// file without index is cut every kDefaultIndexBlockBytes).
inline constexpr uint32_t kMaxCompressFrameBytes = 4u << 20;

struct CompressOptions {
    int level = kDefaultCompressLevel;
    // Checked between frames: when it turns true the compression is abandoned (its
    // temporary removed, the plain file untouched), so a stopping daemon does not wait
    // for a whole file.
    const std::atomic<bool>* cancel = nullptr;
};

struct CompressStats {
    uint64_t pcap_bytes = 0;
    uint64_t compressed_bytes = 0;
    uint64_t frames = 0;
    bool index_aligned = false;   // frames follow the index's blocks
    double cpu_seconds = 0;       // of the calling thread (compress + verify)
};

// Compresses the finished capture file `name` in `directory` (steps 1–6 above). Errors,
// one line naming the file: no manifest, the bytes differ from it, the read-back does
// not match, a write failed (the plain file is then untouched and the temporary gone).
// `vanished` is set (and an error returned) when retention deleted the file meanwhile.
Result<CompressStats> compress_capture(const std::string& directory, const std::string& name,
                                       const CompressOptions& options = {}, bool* vanished = nullptr);

// Written by the compressor thread, read by metrics and tests (relaxed).
// Counter is std::atomic for the compressor's live counters, uint64_t for a snapshot
// (CompressCounts; util/counter.hpp).
template <class Counter>
struct CompressCountersOf {
    Counter compressed_files{};
    Counter failed_files{};
    Counter pcap_bytes{};        // of the files compressed
    Counter compressed_bytes{};  // what they became
    Counter cpu_ns{};            // thread CPU time spent compressing

    template <class F, class... Group>
    static void fields(F&& f, Group&... g) {
        f(g.compressed_files...);
        f(g.failed_files...);
        f(g.pcap_bytes...);
        f(g.compressed_bytes...);
        f(g.cpu_ns...);
    }
};
struct CompressCounters : CompressCountersOf<std::atomic<uint64_t>> {};
using CompressCounts = CompressCountersOf<uint64_t>;

inline constexpr FamilyMetric<CompressCounts, 2> kCompressFilesMetric{
    {"linecap_compress_files_total",
     "Finished capture files the background compressor handled (output.compress), by result: compressed, failed "
     "(logged; the plain file is kept).",
     MetricType::counter},
    "result",
    {{"compressed", &CompressCounts::compressed_files}, {"failed", &CompressCounts::failed_files}}};
inline constexpr FieldMetric<CompressCounts> kCompressSourceBytesMetric{
    {"linecap_compress_source_bytes_total", "Bytes of capture files compressed.", MetricType::counter},
    &CompressCounts::pcap_bytes};
inline constexpr FieldMetric<CompressCounts> kCompressBytesMetric{
    {"linecap_compress_bytes_total", "Bytes of the compressed files they became.", MetricType::counter},
    &CompressCounts::compressed_bytes};
inline constexpr FieldMetric<CompressCounts> kCompressCpuSecondsMetric{
    {"linecap_compress_cpu_seconds_total", "CPU time the compressor used (at idle priority).", MetricType::counter},
    &CompressCounts::cpu_ns,
    1e9};

struct CompressServiceOptions {
    std::string directory;
    uint64_t after_ns = 0;                    // compress files whose mtime is older than this
    int level = kDefaultCompressLevel;
    bool require_index = true;                // output.index: wait for a current index
    bool idle_priority = true;                // SCHED_IDLE + idle I/O class (tests may turn it off)
    std::chrono::milliseconds rescan{30'000}; // the directory is looked at least this often
};

// The daemon's compressor thread, "lc-compress": looks at the directory (at start, when
// woken: a file was finished or indexed, when the next file comes of age, and every
// `rescan`), and compresses the plain capture files that have a manifest (and a current
// index, with output.index), no damage marker, and are older than `after`, oldest name
// first. A file that fails is not tried again in this run (logged once). stop() abandons
// the file in hand (its temporary goes, the plain file stays).
class CompressService final : public BackgroundService {
public:
    // `compressed(name)` is called on the compressor thread after NAME was replaced by
    // its compressed form (retention re-reads its size).
    using CompressedHook = std::function<void(const std::string& name)>;

    CompressService(CompressServiceOptions options, CompressedHook compressed, CompressCounters& counters);
    ~CompressService();

    // Blocks until a look at the directory found nothing to compress now (tests).
    bool wait_idle(std::chrono::milliseconds timeout);

private:
    void work() override;
    void on_stop() override;
    void on_wake() override;
    // One look at the directory and the work it found; returns when the next file comes
    // of age (or max()).
    std::chrono::system_clock::time_point pass();
    bool ready(const StoredFile& file) const;
    void compress_one(const std::string& name);

    const CompressServiceOptions options_;
    const CompressedHook compressed_;
    CompressCounters& counters_;
    std::set<std::string> failed_;  // the thread's own
    std::atomic<bool> cancel_{false};

    std::condition_variable idle_cv_;  // under mutex_
    bool idle_ = false;
};

}  // namespace linecap
