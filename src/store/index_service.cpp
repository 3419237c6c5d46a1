#include "store/index_service.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cstring>
#include <unordered_set>

#include "output/io_status.hpp"
#include "store/catalog.hpp"
#include "store/index_format.hpp"

namespace linecap::store {
namespace {

// <linux/ioprio.h> is not in every libc's headers; the ABI is stable.
constexpr int kIoprioWhoProcess = 1;
constexpr int kIoprioClassIdle = 3;
constexpr int kIoprioClassShift = 13;

void lower_own_priority() {
    sched_param none{};
    if (const int rc = pthread_setschedparam(pthread_self(), SCHED_IDLE, &none); rc != 0)
        spdlog::warn("indexer: cannot run at idle CPU priority ({}); it competes with the writer", errno_text(rc));
    if (::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, kIoprioClassIdle << kIoprioClassShift) != 0)
        spdlog::debug("indexer: idle I/O priority not available: {}", errno_text(errno));
}

// Whether `pcap_path` has an index that describes the file as it is now. Reads only the
// index header (a sweep over a large store must not read every index whole); a damaged
// index body is found, and the index rebuilt, when a query loads it.
bool has_current_index(const CaptureFileInfo& file) {
    const int fd = ::open(index_path_for(file.path).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    IndexHeader h{};
    const bool read = ::pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h);
    ::close(fd);
    return read && std::memcmp(h.magic, kIndexMagic, sizeof h.magic) == 0 && h.version == kIndexVersion &&
           h.pcap_size == file.size && h.pcap_mtime_ns == file.mtime_ns;
}

bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

IndexService::IndexService(IndexServiceOptions options, IndexedHook indexed, IndexingCounters& counters)
    : options_(std::move(options)), indexed_(std::move(indexed)), counters_(counters) {}

IndexService::~IndexService() { stop(); }

void IndexService::start() {
    if (thread_.joinable()) return;
    thread_ = std::thread([this] { run(); });
    pthread_setname_np(thread_.native_handle(), "lc-indexer");
}

void IndexService::stop() {
    {
        const std::lock_guard lock(mutex_);
        if (stopping_) return;
        stopping_ = true;
        drain_deadline_ = std::chrono::steady_clock::now() + options_.drain_limit;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    const std::lock_guard lock(mutex_);
    if (!fresh_.empty())
        spdlog::info("indexer: {} finished files left unindexed at stop; indexed at the next start", fresh_.size());
}

void IndexService::file_finished(const std::string& name) {
    {
        const std::lock_guard lock(mutex_);
        if (fresh_.size() + backlog_.size() >= options_.max_queued) {
            counters_.skipped_files.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        fresh_.push_back(name);
        counters_.queued_files.store(fresh_.size() + backlog_.size(), std::memory_order_relaxed);
    }
    cv_.notify_one();
}

bool IndexService::wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return idle_cv_.wait_for(lock, timeout, [this] { return swept_ && !busy_ && fresh_.empty() && backlog_.empty(); });
}

bool IndexService::next(std::string& name) {
    std::unique_lock lock(mutex_);
    busy_ = false;
    idle_cv_.notify_all();
    cv_.wait(lock, [this] { return stopping_ || !fresh_.empty() || !backlog_.empty(); });
    // Stopping: only files finished during this run, and only until the deadline.
    if (stopping_ && (fresh_.empty() || std::chrono::steady_clock::now() >= drain_deadline_)) return false;
    std::deque<std::string>& from = fresh_.empty() ? backlog_ : fresh_;
    name = std::move(from.front());
    from.pop_front();
    counters_.queued_files.store(fresh_.size() + backlog_.size(), std::memory_order_relaxed);
    busy_ = true;
    return true;
}

void IndexService::run() {
    if (options_.idle_priority) lower_own_priority();
    if (options_.sweep_at_start) sweep();
    {
        const std::lock_guard lock(mutex_);
        swept_ = true;
    }
    for (std::string name; next(name);) index_one(name);
    const std::lock_guard lock(mutex_);
    busy_ = false;
    idle_cv_.notify_all();
}

void IndexService::sweep() {
    auto name_template = NameTemplate::compile(options_.file_template);
    if (!name_template) return;  // the configuration was validated: cannot happen
    auto catalog = scan_catalog(options_.directory, name_template.value());
    if (!catalog) {
        spdlog::warn("indexer: {}; files from before this run are not indexed (run linecap index)",
                     catalog.error().message);
        return;
    }
    std::vector<std::string> missing;
    for (const CaptureFileInfo& f : catalog->files)
        if (!f.pcapng && !has_current_index(f)) missing.push_back(f.name);
    if (missing.empty()) return;
    spdlog::info("indexer: {} capture files in {} have no current index; indexing them in the background",
                 missing.size(), options_.directory);
    {
        const std::lock_guard lock(mutex_);
        const std::unordered_set<std::string> queued(fresh_.begin(), fresh_.end());
        for (std::string& name : missing) {
            if (queued.contains(name)) continue;
            if (fresh_.size() + backlog_.size() >= options_.max_queued) {
                counters_.skipped_files.fetch_add(1, std::memory_order_relaxed);
                continue;
            }
            backlog_.push_back(std::move(name));
        }
        counters_.queued_files.store(fresh_.size() + backlog_.size(), std::memory_order_relaxed);
    }
}

void IndexService::index_one(const std::string& name) {
    const std::string path = options_.directory + "/" + name;
    if (!exists(path)) return;  // deleted by retention before its turn
    const auto started = std::chrono::steady_clock::now();
    Result<IndexStats> built = build_index(path);
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
        ::unlink(index_path_for(path).c_str());
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

}  // namespace linecap::store
