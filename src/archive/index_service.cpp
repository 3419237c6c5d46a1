#include "archive/index_service.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cstring>
#include <exception>
#include <vector>

#include "archive/capture_scan.hpp"
#include "archive/index_format.hpp"
#include "archive/layout.hpp"
#include "archive/store_inventory.hpp"
#include "util/errno_text.hpp"
#include "util/io_status.hpp"
#include "util/stat_time.hpp"

namespace linecap {
namespace {

// Whether `pcap_path` has an index that describes the file as it is now
// (index_staleness). Reads only the index header (a sweep over a large store must not
// read every index whole); a damaged index body is found, and the index rebuilt, when a
// query loads it.
bool has_current_index(const std::string& pcap_path) {
    const std::optional<StoredStat> pcap = stat_stored_capture(pcap_path);  // or its compressed form
    if (!pcap) return false;
    const int fd = ::open(layout::index_name(pcap_path).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    IndexHeader h{};
    struct stat st {};
    const bool read = ::pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h) && ::fstat(fd, &st) == 0;
    ::close(fd);
    return read && std::memcmp(h.magic, kIndexMagic, sizeof h.magic) == 0 && h.version == kIndexVersion &&
           index_staleness(h, stat_mtime_ns(st), pcap->size, pcap->mtime_ns, pcap->ctime_ns).empty();
}

// Plain or compressed (output.compress replaces the one by the other).
bool exists(const std::string& path) { return capture_stored(path); }

}  // namespace

IndexService::IndexService(IndexServiceOptions options, IndexedHook indexed, IndexingCounters& counters)
    : BackgroundService({.name = "lc-indexer", .who = "indexer", .idle_priority = options.idle_priority}),
      options_(std::move(options)),
      indexed_(std::move(indexed)),
      counters_(counters) {}

IndexService::~IndexService() { stop(); }

void IndexService::on_stop() { drain_deadline_ = std::chrono::steady_clock::now() + options_.drain_limit; }

void IndexService::after_stop() {
    size_t left = fresh_.size();  // the thread is gone: fresh_ is nobody's now
    {
        const std::lock_guard lock(mutex_);
        left += inbox_.size();
    }
    if (left > 0) spdlog::info("indexer: {} finished files left unindexed at stop; indexed at the next start", left);
}

// The writer thread. The lock is held for a push only: the indexer holds it for a swap
// and never while it works, so the writer cannot wait behind an idle-priority thread
// for longer than that.
void IndexService::file_finished(const std::string& name) {
    std::string entry = name;  // allocated outside the lock
    {
        const std::lock_guard lock(mutex_);
        if (inbox_.size() + queued_.load(std::memory_order_relaxed) >= options_.max_queued) {
            counters_.skipped_files.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        inbox_.push_back(std::move(entry));
        idle_ = false;
        counters_.queued_files.store(inbox_.size() + queued_.load(std::memory_order_relaxed),
                                     std::memory_order_relaxed);
    }
    cv_.notify_one();
}

bool IndexService::wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return idle_cv_.wait_for(lock, timeout, [this] { return idle_; });
}

void IndexService::publish_queued() {
    queued_.store(fresh_.size() + backlog_.size(), std::memory_order_relaxed);
    counters_.queued_files.store(fresh_.size() + backlog_.size(), std::memory_order_relaxed);
}

bool IndexService::next(std::string& name) {
    std::vector<std::string> arrived;
    bool stopping = false;
    std::chrono::steady_clock::time_point deadline;
    {
        std::unique_lock lock(mutex_);
        if (fresh_.empty() && backlog_.empty() && inbox_.empty()) {
            idle_ = true;
            idle_cv_.notify_all();
            cv_.wait(lock, [this] { return stopping_ || !inbox_.empty(); });
        }
        arrived.swap(inbox_);
        stopping = stopping_;
        deadline = drain_deadline_;
    }
    for (std::string& name : arrived) fresh_.push_back(std::move(name));
    if (stopping) owe_at_normal_priority();
    // Stopping: only files finished during this run, and only until the deadline.
    if (stopping && (fresh_.empty() || std::chrono::steady_clock::now() >= deadline)) {
        publish_queued();
        return false;
    }
    std::deque<std::string>& from = fresh_.empty() ? backlog_ : fresh_;
    name = std::move(from.front());
    from.pop_front();
    publish_queued();
    return true;
}

void IndexService::work() {
    if (options_.sweep_at_start) sweep();
    for (std::string name; next(name);) index_one(name);
    const std::lock_guard lock(mutex_);
    idle_ = true;
    idle_cv_.notify_all();
}

// On the indexer thread, before it takes any file: fresh_ and backlog_ are its own.
void IndexService::sweep() {
    auto file_template = FileTemplate::compile(options_.file_template);
    if (!file_template) return;  // the configuration was validated: cannot happen
    auto catalog = LocalDirectoryStore(options_.directory).list(ListOptions::catalog(file_template.value()));
    if (!catalog) {
        spdlog::warn("indexer: {}; files from before this run are not indexed (run linecap index)",
                     catalog.error().message);
        return;
    }
    size_t queued = 0, skipped = 0;
    for (const StoredFile& f : catalog->files) {
        if (has_current_index(f.path)) continue;
        if (backlog_.size() >= options_.max_queued) {
            ++skipped;
            continue;
        }
        backlog_.push_back(f.name);
        ++queued;
    }
    counters_.skipped_files.fetch_add(skipped, std::memory_order_relaxed);
    publish_queued();
    if (queued > 0)
        spdlog::info("indexer: {} capture files in {} have no current index; indexing them in the background",
                     queued, options_.directory);
}

void IndexService::index_one(const std::string& name) {
    const std::string path = options_.directory + "/" + name;
    if (!exists(path)) return;  // deleted by retention before its turn
    // A file can be queued twice — found by the sweep and finished by this run's writer
    // around the same time — and is indexed once.
    if (has_current_index(path)) return;
    const auto started = std::chrono::steady_clock::now();
    Result<IndexStats> built = runtime_error("not built");
    try {
        built = build_index(path);
    } catch (const std::exception& e) {  // std::bad_alloc on a huge file: that file fails, capture goes on
        built = runtime_error(path + ": " + e.what());
    }
    counters_.busy_ns.fetch_add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                          std::chrono::steady_clock::now() - started)
                                                          .count()),
                                std::memory_order_relaxed);
    if (!built) {
        if (!exists(path)) return;  // deleted by retention while it was read
        counters_.failed_files.fetch_add(1, std::memory_order_relaxed);
        spdlog::error("indexer: {}", built.error().message);
        return;
    }
    // The index is in place; if retention removed the capture file meanwhile, it may have
    // missed the index (see the header comment): remove it here.
    if (!exists(path)) {
        ::unlink(layout::index_name(path).c_str());
        return;
    }
    if (!built->warning.empty()) spdlog::warn("indexer: {}: {}", path, built->warning);
    counters_.built_files.fetch_add(1, std::memory_order_relaxed);
    counters_.pcap_bytes.fetch_add(built->pcap_bytes, std::memory_order_relaxed);
    counters_.index_bytes.fetch_add(built->index_bytes, std::memory_order_relaxed);
    spdlog::debug("indexer: {}: {} packets, index {} bytes, {:.3f} s", path, built->packets, built->index_bytes,
                  built->seconds);
    if (indexed_) indexed_(name, built->index_bytes);
}

}  // namespace linecap
