#include "archive/scrub.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <utility>
#include <vector>

#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "util/follow_directory.hpp"
#include "util/sha256.hpp"
#include "archive/store_inventory.hpp"
#include "archive/verify.hpp"
#include "util/io_status.hpp"
#include "util/unique_fd.hpp"
#include "util/utc_time.hpp"

namespace linecap {
using namespace layout;  // every name in the capture directory
namespace {

constexpr size_t kDirectIoAlignment = 4096;
constexpr uint64_t kMarkerRecountNs = 60 * 1'000'000'000ull;
constexpr size_t kMaxStateBytes = 4096;

// The capture file `name` is stored, plain or compressed.
bool stored_at(int dir_fd, const std::string& name) {
    return exists_at(dir_fd, name) || exists_at(dir_fd, compressed_name(name));
}

// pass start + period × done / total, without overflowing (a period in ns times a
// store's bytes exceeds 64 bits).
uint64_t paced_deadline(uint64_t start_ns, uint64_t period_ns, uint64_t done, uint64_t total) {
    if (total == 0) return start_ns;
    done = std::min(done, total);
    return start_ns + static_cast<uint64_t>(static_cast<unsigned __int128>(period_ns) * done / total);
}

std::string join(const std::vector<std::string>& parts) {
    std::string text;
    for (const std::string& p : parts) text.append(text.empty() ? "" : "; ").append(p);
    return text;
}

}  // namespace

void Scrubber::AlignedFree::operator()(void* p) const { std::free(p); }

Scrubber::Scrubber(ScrubOptions options, ScrubClock& clock, ScrubCounters& counters, MarkHook marked)
    : options_(std::move(options)), clock_(clock), counters_(counters), marked_(std::move(marked)) {
    dir_fd_ = ::open(options_.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    dir_error_ = dir_fd_ < 0 ? errno : 0;
    void* buffer = nullptr;
    const size_t chunk = std::max<size_t>(options_.chunk_bytes / kDirectIoAlignment, 1) * kDirectIoAlignment;
    if (::posix_memalign(&buffer, kDirectIoAlignment, chunk) == 0) buffer_.reset(static_cast<uint8_t*>(buffer));
    counters_.period_s.store(options_.period_ns / 1'000'000'000ull, std::memory_order_relaxed);
}

Scrubber::~Scrubber() {
    if (dir_fd_ >= 0) ::close(dir_fd_);
}

// --- state across restarts ------------------------------------------------------------
//
//   started <ns>      the pass under way (or the last one) started then
//   completed <ns>    the last completed pass ended then (0: none)
//   after <name>      the last file the pass under way checked (absent: none yet)

void Scrubber::load_state() {
    UniqueFd fd(::openat(dir_fd_, std::string(kScrubStateName).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) return;
    std::string text(kMaxStateBytes, '\0');
    const ssize_t n = ::read(fd.get(), text.data(), text.size());
    if (n <= 0) return;
    text.resize(static_cast<size_t>(n));
    uint64_t started = 0, completed = 0;
    std::string after;
    size_t at = 0;
    while (at < text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(at, end - at);
        at = end + 1;
        const size_t space = line.find(' ');
        if (space == std::string::npos) continue;
        const std::string key = line.substr(0, space), value = line.substr(space + 1);
        if (key == "after") {
            after = value;
            continue;
        }
        char* rest = nullptr;
        const uint64_t number = std::strtoull(value.c_str(), &rest, 10);
        if (rest == value.c_str() || *rest != '\0') return;  // damaged: start afresh
        if (key == "started") started = number;
        if (key == "completed") completed = number;
    }
    counters_.last_pass_end_ns.store(completed, std::memory_order_relaxed);
    const uint64_t now = clock_.now_ns();
    if (started == 0 || started > now) return;  // none, or a clock that went back: start afresh
    if (completed >= started) {
        next_pass_ns_ = started + options_.period_ns;  // that pass is done: the next is due a period after it
    } else {
        pass_start_ns_ = started;  // resume
        resume_after_ = after;
    }
}

// Advisory, so written in place rather than through a temporary: a torn write only
// makes the next start begin a new pass, and a crash leaves no temporary behind.
void Scrubber::save_state(const std::string& position, bool completed) {
    UniqueFd fd(::openat(dir_fd_, std::string(kScrubStateName).c_str(),
                         O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd) {
        spdlog::debug("scrub: cannot save its progress in {}/{}: {}", options_.directory, kScrubStateName,
                      errno_text(errno));
        return;
    }
    std::string text = "started " + std::to_string(pass_start_ns_) + "\ncompleted " +
                       std::to_string(counters_.last_pass_end_ns.load(std::memory_order_relaxed)) + "\n";
    if (!completed && !position.empty()) text += "after " + position + "\n";
    if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        spdlog::debug("scrub: cannot save its progress: {}", errno_text(errno));
}

// --- markers --------------------------------------------------------------------------

void Scrubber::count_markers() {
    const Result<StoreInventory> inventory = LocalDirectoryStore(options_.directory, dir_fd_).list({});
    if (!inventory) return;
    const auto markers = std::count_if(inventory->files.begin(), inventory->files.end(),
                                       [](const StoredFile& f) { return f.damaged.has_value(); });
    counters_.damaged_files.store(static_cast<uint64_t>(markers), std::memory_order_relaxed);
    markers_counted_ns_ = clock_.now_ns();
}

void Scrubber::set_marker(const std::string& name, const std::string& why) {
    const std::string marker = damaged_marker_name(name);
    // The first finding stays: it says since when the file is known to differ.
    if (exists_at(dir_fd_, marker)) return;
    UniqueFd fd(::openat(dir_fd_, marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd) {
        spdlog::error("scrub: cannot mark {}/{} as damaged: {}", options_.directory, name, errno_text(errno));
        return;
    }
    const std::string line = format_utc_ns(clock_.now_ns()) + " scrub: " + why + "\n";
    if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        spdlog::warn("scrub: {}/{}: {}", options_.directory, marker, errno_text(errno));  // the marker's presence is what counts
    fd.reset();
    // Retention may have deleted the capture file (and missed the marker) meanwhile.
    if (!stored_at(dir_fd_, name)) {
        ::unlinkat(dir_fd_, marker.c_str(), 0);
        return;
    }
    counters_.damaged_files.fetch_add(1, std::memory_order_relaxed);
    if (marked_) marked_(name);
}

void Scrubber::clear_marker(const std::string& name) {
    const std::string marker = damaged_marker_name(name);
    if (::unlinkat(dir_fd_, marker.c_str(), 0) != 0) {
        if (errno != ENOENT) spdlog::warn("scrub: cannot remove {}/{}: {}", options_.directory, marker, errno_text(errno));
        return;
    }
    spdlog::info("scrub: {}/{} matches its manifest again; its damage marker was removed", options_.directory, name);
    const uint64_t marked = counters_.damaged_files.load(std::memory_order_relaxed);
    counters_.damaged_files.store(marked > 0 ? marked - 1 : 0, std::memory_order_relaxed);
    if (marked_) marked_(name);
}

// --- checking -------------------------------------------------------------------------

ScrubResult Scrubber::check(const std::string& name, uint64_t done_before, uint64_t pass_bytes) {
    const auto count = [this](std::atomic<uint64_t>& counter, ScrubResult result) {
        counter.fetch_add(1, std::memory_order_relaxed);
        return result;
    };
    // What is stored for `name`: the plain file, or its compressed form (whose own bytes
    // are checked against the manifest's "compressed": they were checked to decompress
    // to the pcap bytes before the plain file was deleted, archive/compress.hpp).
    const std::string stored = exists_at(dir_fd_, name) ? name : compressed_name(name);
    const bool compressed = stored != name;
    if (!exists_at(dir_fd_, stored)) return ScrubResult::vanished;
    if (!exists_at(dir_fd_, manifest_name(name))) {
        if (!exists_at(dir_fd_, stored)) return ScrubResult::vanished;  // retention took both
        if (exists_at(dir_fd_, manifest_pending_name(name))) return ScrubResult::pending;  // not counted
        spdlog::debug("scrub: {}/{} has no manifest; not checked", options_.directory, name);
        return count(counters_.missing_manifests, ScrubResult::no_manifest);
    }
    const ManifestRead read = read_manifest(dir_fd_, name);
    if (!read.ok()) {
        if (!exists_at(dir_fd_, stored)) return ScrubResult::vanished;
        if (read.state == ManifestRead::State::missing)  // retention took it meanwhile
            return count(counters_.missing_manifests, ScrubResult::no_manifest);
        spdlog::warn("scrub: {}/{}: manifest unusable, the file cannot be checked: {}", options_.directory, name,
                     read.problem);
        return count(counters_.bad_manifests, ScrubResult::bad_manifest);
    }
    const Manifest& manifest = read.manifest;

    bool direct = true;
    UniqueFd fd(::openat(dir_fd_, stored.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECT));
    if (!fd && errno == EINVAL) {  // the file system does not do O_DIRECT (tmpfs)
        direct = false;
        fd.reset(::openat(dir_fd_, stored.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    }
    if (!fd) {
        if (errno == ENOENT) return ScrubResult::vanished;
        spdlog::error("scrub: {}/{}: {}", options_.directory, name, errno_text(errno));
        return count(counters_.unreadable_files, ScrubResult::unreadable);
    }
    if (!buffer_) return count(counters_.unreadable_files, ScrubResult::unreadable);  // no memory for the chunk
    const size_t chunk = std::max<size_t>(options_.chunk_bytes / kDirectIoAlignment, 1) * kDirectIoAlignment;
    Sha256 hash;
    uint64_t offset = 0;
    for (;;) {
        if (!clock_.wait_until(paced_deadline(pass_start_ns_, options_.period_ns, done_before + offset, pass_bytes))) {
            stopped_ = true;
            return ScrubResult::stopped;
        }
        ssize_t n;
        do {
            n = ::pread(fd.get(), buffer_.get(), chunk, static_cast<off_t>(offset));
        } while (n < 0 && errno == EINTR);
        if (n < 0) {
            spdlog::error("scrub: {}/{}: read at offset {}: {}", options_.directory, stored, offset, errno_text(errno));
            return count(counters_.unreadable_files, ScrubResult::unreadable);
        }
        hash.update({buffer_.get(), static_cast<size_t>(n)});
        counters_.bytes_read.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
        if (!direct && n > 0)
            ::posix_fadvise(fd.get(), static_cast<off_t>(offset), n, POSIX_FADV_DONTNEED);
        offset += static_cast<uint64_t>(n);
        // A short read is the end of a regular file (and O_DIRECT could not read on
        // from an unaligned offset anyway).
        if (static_cast<size_t>(n) < chunk) break;
    }
    if (!hash.ok()) return count(counters_.unreadable_files, ScrubResult::unreadable);
    const std::string sha256 = Sha256::hex(hash.finish());
    if (!exists_at(dir_fd_, stored)) return ScrubResult::vanished;  // deleted (retention, compression) while read

    const std::vector<std::string> diffs = compressed ? compressed_differences(manifest, stored, offset, sha256)
                                                      : content_differences(manifest, offset, sha256);
    if (diffs.empty()) {
        clear_marker(name);
        return count(counters_.ok_files, ScrubResult::ok);
    }
    const std::string why = "bytes differ from the manifest: " + join(diffs);
    spdlog::error("scrub: {}/{}: {}; marked {}", options_.directory, name, why, damaged_marker_name(name));
    set_marker(name, why);
    return count(counters_.mismatched_files, ScrubResult::mismatch);
}

bool Scrubber::run_pass() {
    if (dir_fd_ < 0) {
        spdlog::error("scrub: {}: {}", options_.directory, errno_text(dir_error_));
        return false;
    }
    // A capture volume repaired and mounted again: the pass reads the new file system.
    if (follow_directory(dir_fd_, options_.directory))
        spdlog::info("scrub: {}: the directory is another one now (mounted again?); following it", options_.directory);
    if (pass_start_ns_ == 0) {
        pass_start_ns_ = clock_.now_ns();
        resume_after_.clear();
    }
    // Name order; a compressed file is listed under its capture name (unless the plain
    // one is still there), and check() reads whichever is stored.
    const Result<StoreInventory> inventory = LocalDirectoryStore(options_.directory, dir_fd_).list({});
    if (!inventory) {
        spdlog::error("scrub: {}", inventory.error().message);
        return false;
    }
    const std::vector<StoredFile>& files = inventory->files;
    count_markers();
    uint64_t total = 0, done = 0;
    for (const StoredFile& f : files) {
        total += f.stored_size;
        if (!resume_after_.empty() && f.name <= resume_after_) done += f.stored_size;
    }
    if (!resume_after_.empty())
        spdlog::info("scrub: resuming the pass of {} after {}", format_utc_ns(pass_start_ns_), resume_after_);
    // Nothing written into an empty directory: a daemon that captured nothing leaves
    // nothing behind.
    if (!files.empty()) save_state(resume_after_, false);
    for (const StoredFile& f : files) {
        if (!resume_after_.empty() && f.name <= resume_after_) continue;
        if (check(f.name, done, total) == ScrubResult::stopped) return false;
        done += f.stored_size;
        resume_after_ = f.name;
        save_state(resume_after_, false);
        // Retention deletes marked files too; while there are any, the gauge is kept
        // honest without a directory listing per file.
        if (counters_.damaged_files.load(std::memory_order_relaxed) > 0 &&
            clock_.now_ns() - markers_counted_ns_ >= kMarkerRecountNs)
            count_markers();
    }
    const uint64_t end = clock_.now_ns();
    spdlog::info("scrub: pass over {} finished: {} files, {} bytes, started {}", options_.directory, files.size(),
                 total, format_utc_ns(pass_start_ns_));
    counters_.passes.fetch_add(1, std::memory_order_relaxed);
    counters_.last_pass_end_ns.store(end, std::memory_order_relaxed);
    if (!files.empty()) save_state("", true);
    next_pass_ns_ = pass_start_ns_ + options_.period_ns;
    pass_start_ns_ = 0;
    resume_after_.clear();
    return true;
}

void Scrubber::run() {
    load_state();
    while (!stopped_) {
        if (pass_start_ns_ == 0 && next_pass_ns_ > clock_.now_ns() && !clock_.wait_until(next_pass_ns_)) return;
        if (!run_pass() && !stopped_) {
            // The directory cannot be read now: try again in a period.
            next_pass_ns_ = clock_.now_ns() + options_.period_ns;
            pass_start_ns_ = 0;
        }
    }
}

// --- the thread -----------------------------------------------------------------------

uint64_t ScrubService::WallClock::now_ns() { return utc_now_ns(); }

// On the wall clock, as the pacing is: a clock set back makes the pass wait that much
// longer, one set forward makes it hurry — either way at idle priority.
bool ScrubService::WallClock::wait_until(uint64_t deadline_ns) {
    const std::chrono::system_clock::time_point deadline{
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(deadline_ns))};
    std::unique_lock lock(service_.mutex_);
    return !service_.cv_.wait_until(lock, deadline, [this] { return service_.stopping_.load(); });
}

ScrubService::ScrubService(ScrubOptions options, Scrubber::MarkHook marked, ScrubCounters& counters)
    : BackgroundService({.name = "lc-scrub", .who = "scrub", .idle_priority = options.idle_priority}),
      options_(std::move(options)),
      marked_(std::move(marked)),
      counters_(counters) {}

ScrubService::~ScrubService() { stop(); }

void ScrubService::work() {
    Scrubber scrubber(options_, clock_, counters_, marked_);
    scrubber.run();
}

}  // namespace linecap
