#include "archive/compress.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <vector>

#include "archive/capture_scan.hpp"
#include "archive/index_format.hpp"
#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "util/sha256.hpp"
#include "archive/store_inventory.hpp"
#include "format/zstd_seekable.hpp"
#include "util/thread_cpu.hpp"
#include "util/unique_fd.hpp"

namespace linecap {
namespace {

constexpr mode_t kCompressedMode = 0640;  // like the capture file it replaces
constexpr size_t kVerifyChunk = 4u << 20;

// Where the frames start: every index block (so a block read decompresses one frame),
// else every kDefaultIndexBlockBytes; no frame longer than kMaxCompressFrameBytes.
std::vector<uint64_t> frame_starts(const std::string& path, const format::OpenFile& file, bool* aligned) {
    std::vector<uint64_t> cuts{0};
    const LoadedIndex li = load_index(path, file.size(), file.mtime_ns());
    *aligned = li.state == IndexState::valid;
    if (*aligned) {
        const auto blocks = li.index.blocks();
        for (size_t i = 1; i < blocks.size(); ++i) cuts.push_back(blocks[i].offset);
    } else {
        for (uint64_t at = kDefaultIndexBlockBytes; at < file.size(); at += kDefaultIndexBlockBytes) cuts.push_back(at);
    }
    std::vector<uint64_t> starts;
    for (size_t i = 0; i < cuts.size(); ++i) {
        const uint64_t end = i + 1 < cuts.size() ? cuts[i + 1] : file.size();
        for (uint64_t at = cuts[i]; at < end; at += kMaxCompressFrameBytes) starts.push_back(at);
    }
    return starts;
}

// The SHA-256 and size of the decompressed bytes of the compressed file at `path`.
Result<std::pair<uint64_t, std::string>> decompressed_digest(const std::string& path) {
    auto file = format::open_capture_file(path);
    if (!file) return file.error();
    if (!file.value()->compressed()) return runtime_error("not a compressed file");
    std::vector<uint8_t> chunk(kVerifyChunk);
    Sha256 hash;
    uint64_t at = 0;
    while (at < file.value()->size()) {
        const ssize_t n = file.value()->read_at(chunk.data(), chunk.size(), at);
        if (n <= 0) {
            const auto* s = static_cast<const format::SeekableSource*>(file.value().get());
            return runtime_error("read back at offset " + std::to_string(at) + ": " +
                                 (s->last_error().empty() ? errno_text(n < 0 ? errno : EIO) : s->last_error()));
        }
        hash.update({chunk.data(), static_cast<size_t>(n)});
        at += static_cast<uint64_t>(n);
    }
    if (!hash.ok()) return runtime_error("sha256 failed");
    return std::make_pair(at, Sha256::hex(hash.finish()));
}

// 1. The plain bytes of `file`, compressed into `out` frame by frame and hashed on both
// sides; they must be the manifest's. Returns the compressed bytes' SHA-256, or why not.
Result<std::string> compress_into(const format::FileSource& file, const std::vector<uint64_t>& starts,
                                  const Manifest& manifest, const CompressOptions& options, layout::AtomicFile& out,
                                  CompressStats& stats) {
    const std::string& zst = out.final_name();
    format::SeekableWriter writer(options.level);
    Sha256 plain_hash, compressed_hash;
    std::vector<uint8_t> in, compressed;
    for (size_t i = 0; i < starts.size(); ++i) {
        if (options.cancel && options.cancel->load(std::memory_order_relaxed)) return runtime_error("stopped");
        const uint64_t end = i + 1 < starts.size() ? starts[i + 1] : file.size();
        in.resize(static_cast<size_t>(end - starts[i]));
        if (file.read_at(in.data(), in.size(), starts[i]) != static_cast<ssize_t>(in.size()))
            return runtime_error("read at offset " + std::to_string(starts[i]) + ": " + errno_text(errno));
        plain_hash.update(in);
        compressed.clear();
        if (const Status s = writer.frame(in, compressed); !s) return s.error();
        compressed_hash.update(compressed);
        if (const IoStatus s = out.write(compressed); !s.ok()) return runtime_error(zst + ": " + s.message());
        stats.compressed_bytes += compressed.size();
    }
    compressed.clear();
    writer.seek_table(compressed);
    compressed_hash.update(compressed);
    if (const IoStatus s = out.write(compressed); !s.ok()) return runtime_error(zst + ": " + s.message());
    stats.compressed_bytes += compressed.size();
    stats.pcap_bytes = file.size();
    stats.frames = writer.frames();
    if (!plain_hash.ok() || !compressed_hash.ok()) return runtime_error("sha256 failed");
    const std::string plain_sha = Sha256::hex(plain_hash.finish());
    if (plain_sha != manifest.sha256)
        return runtime_error("its bytes differ from its manifest (sha256 " + plain_sha + ", manifest " +
                             manifest.sha256 + "); the scrub marks it");
    return Sha256::hex(compressed_hash.finish());
}

// 2. The pcap's mtime (what its index recorded) on the temporary, then the read-back:
// it must decompress to exactly the manifest's bytes.
Status check_compressed(const std::string& directory, const format::FileSource& file, const Manifest& manifest,
                        const layout::AtomicFile& out) {
    const std::string& zst = out.final_name();
    const timespec times[2] = {{0, UTIME_OMIT},
                               {static_cast<time_t>(file.mtime_ns() / 1'000'000'000),
                                static_cast<long>(file.mtime_ns() % 1'000'000'000)}};
    if (::futimens(out.fd(), times) != 0) return runtime_error(zst + ": futimens: " + errno_text(errno));
    const auto back = decompressed_digest(directory + "/" + out.temporary_name());
    if (!back) return runtime_error("the compressed copy does not read back: " + back.error().message);
    if (back->first != manifest.size || back->second != manifest.sha256)
        return runtime_error("the compressed copy decompresses to other bytes (" + std::to_string(back->first) +
                             " bytes, sha256 " + back->second + ")");
    return {};
}

// 5. The index, unchanged, written again after the .zst's ctime.
void rewrite_index(const std::string& directory, int dir_fd, const std::string& name, const format::FileSource& file) {
    const std::string index = layout::index_name(name);
    if (load_index(directory + "/" + name, file.size(), file.mtime_ns()).state != IndexState::valid) return;
    UniqueFd fd(::openat(dir_fd, index.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st {};
    std::vector<uint8_t> bytes;
    if (fd && ::fstat(fd.get(), &st) == 0) bytes.resize(static_cast<size_t>(st.st_size));
    if (!bytes.empty() && ::pread(fd.get(), bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size())) {
        if (const IoStatus s = layout::atomic_write(dir_fd, index, bytes, st.st_mode & 07777); !s.ok())
            spdlog::warn("compress: {}/{}: {}; it is rebuilt by the indexer", directory, index, s.message());
    }
}

}  // namespace

Result<CompressStats> compress_capture(const std::string& directory, const std::string& name,
                                       const CompressOptions& options, bool* vanished) {
    const double cpu_start = thread_cpu_seconds();
    const std::string path = directory + "/" + name;
    const std::string zst = layout::compressed_name(name);
    const auto fail = [&](const std::string& why) { return runtime_error(path + ": " + why + "; not compressed"); };
    if (vanished) *vanished = false;
    UniqueFd dir_fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd) return runtime_error(directory + ": " + errno_text(errno));

    ManifestRead read = read_manifest(dir_fd.get(), name);
    if (!read.ok())
        return fail(read.state == ManifestRead::State::missing ? "no manifest to record the compressed file in"
                                                                : read.problem);
    Manifest manifest = std::move(read.manifest);
    auto opened = format::FileSource::open(path);
    if (!opened) return fail(opened.error().message);
    const format::FileSource& file = *opened.value();
    // One compressor per file (the daemon's, `linecap compress`): the loser of the race
    // leaves it alone. Deleted meanwhile (the other finished): nothing to do.
    UniqueFd lock(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat locked {};
    if (!lock || ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0 || ::fstat(lock.get(), &locked) != 0 ||
        locked.st_nlink == 0) {
        if (vanished) *vanished = true;
        return fail("being compressed by another process, or gone");
    }
    if (file.size() != manifest.size)
        return fail("its size " + std::to_string(file.size()) + " differs from its manifest's " +
                    std::to_string(manifest.size));
    file.advise_sequential();

    CompressStats stats;
    const std::vector<uint64_t> starts = frame_starts(path, file, &stats.index_aligned);
    layout::AtomicFile out;
    if (const IoStatus s = out.open(dir_fd.get(), zst, kCompressedMode); !s.ok())
        return fail(zst + ": " + s.message());
    const Result<std::string> compressed_sha = compress_into(file, starts, manifest, options, out, stats);
    if (!compressed_sha) return fail(compressed_sha.error().message);
    if (const Status s = check_compressed(directory, file, manifest, out); !s) return fail(s.error().message);

    // 3. Durable under its name.
    if (const IoStatus s = out.commit(); !s.ok()) return fail(zst + ": " + s.message());

    // 4. The manifest says what the compressed file is.
    manifest.compressed = ManifestCompressed{zst, stats.compressed_bytes, compressed_sha.value()};
    if (const IoStatus s = write_manifest(dir_fd.get(), manifest); !s.ok()) {
        ::unlinkat(dir_fd.get(), zst.c_str(), 0);
        ::fsync(dir_fd.get());
        return fail(layout::manifest_name(name) + ": " + s.message());
    }

    rewrite_index(directory, dir_fd.get(), name, file);

    // 6. The plain file goes. Gone already: retention deleted the file meanwhile (and
    // perhaps not what was made since): the rest goes too.
    if (::unlinkat(dir_fd.get(), name.c_str(), 0) != 0) {
        const int error = errno;
        if (error == ENOENT) {
            for (const std::string& side : layout::sidecar_names(name)) ::unlinkat(dir_fd.get(), side.c_str(), 0);
            if (vanished) *vanished = true;
            return runtime_error(path + ": deleted by retention while it was compressed");
        }
        // The compressed copy is complete and recorded; the plain one stays beside it and
        // recovery undoes the compression at the next start.
        return fail("delete: " + errno_text(error));
    }
    ::fsync(dir_fd.get());
    stats.cpu_seconds = thread_cpu_seconds() - cpu_start;
    return stats;
}

// --- the service ----------------------------------------------------------------------

CompressService::CompressService(CompressServiceOptions options, CompressedHook compressed, CompressCounters& counters)
    : BackgroundService({.name = "lc-compress", .who = "compress", .idle_priority = options.idle_priority}),
      options_(std::move(options)),
      compressed_(std::move(compressed)),
      counters_(counters) {}

CompressService::~CompressService() { stop(); }

void CompressService::on_stop() { cancel_.store(true, std::memory_order_relaxed); }

void CompressService::on_wake() { idle_ = false; }

bool CompressService::wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return idle_cv_.wait_for(lock, timeout, [this] { return idle_; });
}

std::chrono::system_clock::time_point CompressService::pass() {
    using Clock = std::chrono::system_clock;
    auto next_due = Clock::time_point::max();
    const Result<StoreInventory> inventory = LocalDirectoryStore(options_.directory).list({});
    if (!inventory) {
        spdlog::error("compress: {}", inventory.error().message);
        return next_due;
    }
    const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
    for (const StoredFile& f : inventory->files) {
        {
            const std::lock_guard lock(mutex_);
            if (stopping_) break;
        }
        if (f.compressed || failed_.contains(f.name)) continue;
        const int64_t due_ns = f.mtime_ns + static_cast<int64_t>(options_.after_ns);
        if (due_ns > now_ns) {
            next_due = std::min(next_due, Clock::time_point(std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::nanoseconds(due_ns))));
            continue;
        }
        if (ready(f)) compress_one(f.name);
    }
    return next_due;
}

// Not yet: the manifest (written after the file is renamed) and, with indexing on, the
// index (so the frames follow its blocks); the indexer wakes this service when it is there.
// Evidence of damage stays as it is.
bool CompressService::ready(const StoredFile& file) const {
    return file.manifest && (file.index || !options_.require_index) && !file.damaged;
}

void CompressService::compress_one(const std::string& name) {
    bool vanished = false;
    const Result<CompressStats> done =
        compress_capture(options_.directory, name, {.level = options_.level, .cancel = &cancel_}, &vanished);
    if (!done) {
        if (vanished || cancel_.load(std::memory_order_relaxed)) return;
        failed_.insert(name);
        counters_.failed_files.fetch_add(1, std::memory_order_relaxed);
        spdlog::error("compress: {}", done.error().message);
        return;
    }
    counters_.compressed_files.fetch_add(1, std::memory_order_relaxed);
    counters_.pcap_bytes.fetch_add(done->pcap_bytes, std::memory_order_relaxed);
    counters_.compressed_bytes.fetch_add(done->compressed_bytes, std::memory_order_relaxed);
    counters_.cpu_ns.fetch_add(static_cast<uint64_t>(done->cpu_seconds * 1e9), std::memory_order_relaxed);
    spdlog::debug("compress: {}/{}: {} → {} bytes, {} frames{}, {:.3f} s CPU", options_.directory, name,
                  done->pcap_bytes, done->compressed_bytes, done->frames,
                  done->index_aligned ? " at index blocks" : "", done->cpu_seconds);
    if (compressed_) compressed_(name);
}

void CompressService::work() {
    for (;;) {
        {
            const std::lock_guard lock(mutex_);
            if (stopping_) break;
            woken_ = false;
        }
        const auto next_due = pass();
        std::unique_lock lock(mutex_);
        if (stopping_) break;
        if (!woken_) {
            idle_ = true;
            idle_cv_.notify_all();
        }
        const auto rescan = std::chrono::system_clock::now() + options_.rescan;
        cv_.wait_until(lock, std::min(next_due, rescan), [this] { return stopping_ || woken_; });
    }
    const std::lock_guard lock(mutex_);
    idle_ = true;
    idle_cv_.notify_all();
}

}  // namespace linecap
