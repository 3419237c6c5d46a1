// ManifestHasher: the SHA-256 of every capture file, computed from the blocks in memory on a
// thread of its own, and the file's manifest written once the file is finished.
//
// Why not on the writer thread: SHA-256 costs about as much CPU per byte as the copy into the
// page cache does several times over (1.3–2 GB/s per core with SHA-NI against 4–6 GB/s for a
// write into warm memory), so hashing where the bytes are written capped the shipped defaults at
// a third of what the writer does without it (issue 12). The writer only writes: once a block
// has reached the file it hands the block over here, and this thread hashes it and puts it back
// on its stream's free ring; the few bytes the writer appends itself (file header, pcapng
// statistics block) are handed over as copies. On a machine with a spare core the two run in
// parallel; where they share one, nothing is saved but nothing is lost either.
//
// The guarantee: a finished file's manifest matches its bytes. Per stream the jobs keep the
// order in which bytes were appended to the file, and only bytes that reached it are handed
// over (a failed append is cut off the file and its block comes back unhashed). When a file is
// finished (renamed), the writer hands over its manifest without the digest; this thread
// completes it, writes it (atomically; on failure it retries every second), and only then
// tells retention and the file_finished hook about the file — so the indexer and retention
// never see a finished file before its manifest exists.
//
// Back-pressure: a block returns to the free ring only after it is hashed, so a hasher that
// falls behind shows as writer_full drops, as a slow writer does; nothing is lost silently.
//
// Threading: the push functions are called by the writer thread that owns the stream; with
// hashing on, every block of every stream goes back to its free ring through this thread
// (hashed or not), so each free ring keeps a single producer. Everything else runs here.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "output/block.hpp"
#include "output/manifest.hpp"
#include "output/retention.hpp"
#include "output/sha256.hpp"
#include "output/stream.hpp"
#include "util/result.hpp"

namespace linecap {

struct WriterContext;

class ManifestHasher {
public:
    // `streams[i]` is the stream with index i (WriteBlock::stream); its free ring gets the
    // blocks back.
    ManifestHasher(const WriterContext& context, std::vector<Stream*> streams);
    ~ManifestHasher();  // stop()
    ManifestHasher(const ManifestHasher&) = delete;
    ManifestHasher& operator=(const ManifestHasher&) = delete;

    Status start();
    // Does everything queued (hashes, manifests, one last retry of failed ones), then joins.
    // Without start() the queue is worked off on the calling thread.
    void stop();

    // Writer side, in the order the bytes went into the stream's open file.
    void opened(uint32_t stream, std::span<const uint8_t> header);   // a new file, its header
    void appended(uint32_t stream, std::span<const uint8_t> bytes);  // bytes of the file, copied
    void appended(WriteBlock* block);   // the block's records are in the file: hash, give back
    void give_back(WriteBlock* block);  // not in any file: back to the free ring, in order
    // The open file was renamed to its final name; `manifest` lacks only the digest,
    // `file.bytes` the manifest's size.
    void finished(uint32_t stream, Manifest manifest, FinishedFile file);
    void abandoned(uint32_t stream);    // the open file was not finished (left for recovery)

    // Jobs waiting (blocks and files), for tests and metrics.
    size_t backlog() const;

private:
    enum class Kind { open, bytes, block, give_back, finish, abandon };
    struct Job {
        Kind kind;
        uint32_t stream = 0;
        WriteBlock* block = nullptr;
        std::vector<uint8_t> bytes;
        std::unique_ptr<Manifest> manifest;
        FinishedFile file;
    };

    void push(Job job);
    void run();
    void work(Job& job);
    void return_block(WriteBlock* block);
    void complete(uint32_t stream, Manifest& manifest, FinishedFile& file);
    void retry_pending(std::chrono::steady_clock::time_point now);

    const WriterContext& context_;
    std::vector<Stream*> streams_;
    std::vector<Sha256> hashes_;  // per stream: the open file's digest so far

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Job> jobs_;        // guarded by mutex_
    bool stopping_ = false;       // guarded by mutex_
    std::thread thread_;

    struct Pending {
        Manifest manifest;
    };
    std::vector<Pending> pending_;  // manifests that could not be written yet (this thread)
    std::chrono::steady_clock::time_point last_retry_{};
};

}  // namespace linecap
