#include "archive/retention.hpp"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>

#include "archive/capture_scan.hpp"
#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "util/human_bytes.hpp"
#include "util/stat_time.hpp"
#include "util/unique_fd.hpp"
#include "util/utc_time.hpp"

namespace linecap {
namespace {

constexpr uint64_t kSecond = 1000000000ull;
constexpr auto kPeriod = std::chrono::seconds(1);

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return {};
    const size_t e = s.find_last_not_of(" \t\r");
    return s.substr(b, e - b + 1);
}

std::string strip_trailing_slashes(std::string s) {
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
}

}  // namespace

// --- HoldList -------------------------------------------------------------------------

HoldList::HoldList(std::string path, std::string directory)
    : path_(std::move(path)), directory_(strip_trailing_slashes(std::move(directory))) {
    char* real = ::realpath(directory_.c_str(), nullptr);
    if (real != nullptr) {
        if (directory_ != real) real_directory_ = real;
        std::free(real);
    }
}

bool HoldList::refresh() {
    if (!configured()) return false;
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) {
        const bool changed = readable_ || stat_known_;
        readable_ = false;
        stat_known_ = false;
        problem_ = path_ + ": " + errno_text(errno);
        return changed;
    }
    if (readable_ && stat_known_ && st.st_ino == ino_ && st.st_size == size_ && stat_mtime_ns(st) == mtime_ns_) return false;

    std::ifstream in(path_);
    if (!in) {
        const bool changed = readable_;
        readable_ = false;
        stat_known_ = false;
        problem_ = path_ + ": cannot be read";
        return changed;
    }
    std::vector<Entry> entries;
    std::string line;
    while (std::getline(in, line)) {
        if (const size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        line = trim(line);
        if (line.empty()) continue;
        Entry e;
        e.pattern = strip_trailing_slashes(line[0] == '/' ? line : directory_ + "/" + line);
        e.glob = e.pattern.find_first_of("*?[") != std::string::npos;
        entries.push_back(std::move(e));
    }
    if (in.bad()) {
        readable_ = false;
        stat_known_ = false;
        problem_ = path_ + ": read error";
        return true;
    }
    entries_ = std::move(entries);
    readable_ = true;
    problem_.clear();
    stat_known_ = true;
    ino_ = st.st_ino;
    size_ = st.st_size;
    mtime_ns_ = stat_mtime_ns(st);
    return true;
}

bool HoldList::holds(const std::string& name) const {
    if (!configured()) return false;
    if (!readable_) return true;
    const std::string paths[2] = {directory_ + "/" + name,
                                  real_directory_.empty() ? std::string() : real_directory_ + "/" + name};
    for (const std::string& path : paths) {
        if (path.empty()) continue;
        for (const Entry& e : entries_) {
            if (e.glob) {
                if (::fnmatch(e.pattern.c_str(), path.c_str(), FNM_PATHNAME) == 0) return true;
                // A pattern naming directories holds what is below them.
                const std::string below = e.pattern + "/*";
                if (::fnmatch(below.c_str(), path.c_str(), 0) == 0) return true;
            } else if (path == e.pattern || (path.size() > e.pattern.size() && path.starts_with(e.pattern) &&
                                             (e.pattern == "/" || path[e.pattern.size()] == '/'))) {
                return true;
            }
        }
    }
    return false;
}

// --- RetentionManager -----------------------------------------------------------------

RetentionManager::RetentionManager(const OutputConfig& config, int dir_fd, RetentionEnvironment environment,
                                   RetentionCounters& counters)
    : config_(config),
      dir_fd_(dir_fd),
      store_(config.directory, dir_fd),
      env_(std::move(environment)),
      counters_(counters),
      hold_(config.retention.hold_file, config.directory) {}

bool RetentionManager::enabled() const { return config_.retention.any_budget(); }

void RetentionManager::add(FinishedFile file) {
    const std::lock_guard lock(pending_mutex_);
    pending_.push_back(std::move(file));
}

void RetentionManager::request_room(uint64_t bytes) {
    const std::lock_guard lock(pending_mutex_);
    room_requested_ = std::max(room_requested_, std::max<uint64_t>(bytes, 1));
}

void RetentionManager::sidecar_changed(const std::string& name) {
    const std::lock_guard lock(pending_mutex_);
    pending_sidecars_.push_back(name);
}

// From the disk rather than by adding the sidecar's size: idempotent, whether or not the
// scan or an earlier report already counted it. A compressed file (NAME.zst, a
// "sidecar") may have replaced the plain one, or be about to.
void RetentionManager::refresh_bytes(const std::string& name) {
    const auto it = first_ns_by_name_.find(name);
    if (it == first_ns_by_name_.end()) return;  // deleted meanwhile, or not ours
    const auto node = by_age_.find(Key{it->second, name});
    if (node == by_age_.end()) return;
    const std::optional<StoredFile> stored = store_.find(name, {.sidecar_bytes = true});
    if (!stored) return;
    stored_bytes_ = stored_bytes_ - std::min(stored_bytes_, node->second.bytes) + stored->bytes_on_disk;
    node->second.bytes = stored->bytes_on_disk;
}

std::optional<FilesystemSpace> RetentionManager::filesystem() const {
    if (env_.filesystem) return env_.filesystem();
    struct statvfs fs {};
    if (::fstatvfs(dir_fd_, &fs) != 0) return std::nullopt;
    return FilesystemSpace{uint64_t{fs.f_bavail} * fs.f_frsize, uint64_t{fs.f_blocks} * fs.f_frsize};
}

void RetentionManager::insert(FinishedFile file) {
    erase(file.name);
    first_ns_by_name_[file.name] = file.first_ns;
    stored_bytes_ += file.bytes;
    Key key{file.first_ns, file.name};
    by_age_.emplace(std::move(key), std::move(file));
    held_dirty_ = true;
}

void RetentionManager::erase(const std::string& name) {
    const auto it = first_ns_by_name_.find(name);
    if (it == first_ns_by_name_.end()) return;
    const auto node = by_age_.find(Key{it->second, name});
    if (node != by_age_.end()) {
        stored_bytes_ -= std::min(stored_bytes_, node->second.bytes);
        by_age_.erase(node);
    }
    first_ns_by_name_.erase(it);
    held_dirty_ = true;
}

void RetentionManager::scan() {
    scanned_ = true;
    const Result<StoreInventory> inventory = store_.list({.sidecar_bytes = true});
    if (!inventory) {
        spdlog::error("retention: cannot list {}; only files finished from now on are managed",
                      inventory.error().message);
        return;
    }
    for (const StoredFile& stored : inventory->files) {
        if (first_ns_by_name_.contains(stored.name)) continue;  // reported by the writer meanwhile
        FinishedFile f;
        f.name = stored.name;
        f.bytes = stored.bytes_on_disk;
        const uint64_t mtime = static_cast<uint64_t>(std::max<int64_t>(stored.mtime_ns, 0));
        const ManifestRead m = store_.read_manifest(stored);
        if (!m.ok() && m.state != ManifestRead::State::missing)
            spdlog::warn("retention: {}/{}; the file's age is taken from its first packet", config_.directory,
                         m.problem);
        if (m.ok() && m.manifest.packets > 0) {
            f.first_ns = m.manifest.first_ns;
            f.last_ns = m.manifest.last_ns;
        } else {
            f.first_ns = f.last_ns = mtime;
            if (auto file = store_.open(stored)) {
                const CaptureScan s = scan_capture(*file.value(), ScanOptions{.first_packet_only = true});
                if (s.io.ok() && s.packets > 0) f.first_ns = std::min(s.first_ns, mtime);
            }
        }
        insert(std::move(f));
    }
    spdlog::info("retention: {} finished capture files in {} ({}){}", by_age_.size(), config_.directory,
                 human_bytes(stored_bytes_), enabled() ? "" : "; no retention limits set, nothing will be deleted");
}

bool RetentionManager::remove_files(const FinishedFile& file) {
    if (::unlinkat(dir_fd_, file.name.c_str(), 0) != 0 && errno != ENOENT) {
        if (delete_failed_logged_.insert(file.name).second)
            spdlog::error("retention: cannot delete {}/{}: {}", config_.directory, file.name, errno_text(errno));
        return false;
    }
    for (const std::string& side : layout::sidecar_names(file.name)) {
        if (::unlinkat(dir_fd_, side.c_str(), 0) != 0 && errno != ENOENT)
            spdlog::warn("retention: cannot delete {}/{}: {}", config_.directory, side, errno_text(errno));
    }
    delete_failed_logged_.erase(file.name);
    held_logged_.erase(file.name);
    return true;
}

uint64_t RetentionManager::take_reports() {
    std::vector<FinishedFile> pending;
    std::vector<std::string> sidecars;
    uint64_t room = 0;
    {
        const std::lock_guard lock(pending_mutex_);
        pending.swap(pending_);
        sidecars.swap(pending_sidecars_);
        room = std::exchange(room_requested_, 0);
    }
    for (FinishedFile& f : pending) insert(std::move(f));
    if (!scanned_) scan();
    for (const std::string& name : sidecars) refresh_bytes(name);
    return room;
}

void RetentionManager::refresh_hold() {
    if (!hold_.configured() || !hold_.refresh()) return;
    held_dirty_ = true;
    if (!hold_.readable()) {
        spdlog::error("retention: legal hold list {}; deleting nothing until it can be read", hold_.problem());
        hold_unreadable_logged_ = true;
    } else {
        spdlog::info("retention: legal hold list {}: {} entries", config_.retention.hold_file, hold_.entries());
        hold_unreadable_logged_ = false;
    }
}

struct RetentionManager::Budget {
    const RetentionConfig& r;
    uint64_t room = 0;               // a full disk asked for this much free space
    // Plain values rather than an optional: GCC 12 sees a maybe-uninitialized read in the latter.
    FilesystemSpace space{};
    bool have_fs = false;
    uint64_t used = 0;               // stored files and the files being written
    uint64_t limit = UINT64_MAX;     // of `used`
    uint64_t free = UINT64_MAX;      // once the files being written reach their reserved size
    uint64_t free_wanted = 0;
    uint64_t cutoff = 0;             // files whose last packet is older expire (0: no max_age)
    bool force_one = false;          // a full disk although statvfs shows room: delete one file

    const FilesystemSpace* fs() const { return have_fs ? &space : nullptr; }
    bool over_bytes() const { return used > limit; }
    bool short_of_free() const { return have_fs && free_wanted > 0 && free < free_wanted; }

    // Why `f`, the oldest file left, goes now; "" when nothing is over budget and it has
    // not expired.
    std::string reason(const FinishedFile& f) const {
        if (over_bytes()) return r.max_bytes > 0 && limit == r.max_bytes ? "max_bytes" : "max_percent";
        if (short_of_free()) return room > 0 && free_wanted > r.min_free_bytes ? "disk full" : "min_free_bytes";
        if (force_one) return "disk full";
        if (cutoff > 0 && f.last_ns < cutoff) return "max_age";
        return {};
    }

    // The budget `reason` names, as it stood before `victim` was deleted.
    std::string explain(const std::string& reason, const FinishedFile& victim) const {
        if (reason == "max_age")
            return "last packet " + format_utc_ns(victim.last_ns) + " older than " + std::to_string(r.max_age_s) + " s";
        if (reason == "min_free_bytes" || reason == "disk full")
            return "free " + human_bytes(fs() ? fs()->free_bytes : 0) + ", want " + human_bytes(free_wanted);
        return "using " + human_bytes(used + victim.bytes) + " of " + human_bytes(limit);
    }
};

RetentionManager::Budget RetentionManager::measure(uint64_t room, uint64_t now_ns) const {
    const RetentionConfig& r = config_.retention;
    Budget b{.r = r, .room = room};
    if (r.max_percent > 0 || r.min_free_bytes > 0 || room > 0) {
        if (const std::optional<FilesystemSpace> probed = filesystem()) {
            b.space = *probed;
            b.have_fs = true;
        }
    }
    const FilesystemSpace* fs = b.fs();
    const InProgressBytes open = env_.in_progress ? env_.in_progress() : InProgressBytes{};
    b.used = stored_bytes_ + std::max(open.reserved, open.actual);
    if (r.max_bytes > 0) b.limit = r.max_bytes;
    if (r.max_percent > 0 && fs)
        b.limit = std::min(b.limit, static_cast<uint64_t>(std::floor(static_cast<double>(fs->size_bytes) * r.max_percent / 100.0)));
    const uint64_t growth = std::max(open.reserved, open.actual) - open.actual;
    b.free = fs ? fs->free_bytes - std::min(fs->free_bytes, growth) : UINT64_MAX;
    b.free_wanted = std::max<uint64_t>(r.min_free_bytes, room > 0 ? room : 0);
    b.cutoff = r.max_age_s > 0 && now_ns > r.max_age_s * kSecond ? now_ns - r.max_age_s * kSecond : 0;
    // One file, at most once a second (quota, inodes).
    b.force_one = room > 0 && fs && fs->free_bytes >= room && now_ns - last_forced_ns_ >= kSecond;
    return b;
}

bool RetentionManager::archived(const std::string& name) const {
    return layout::exists_at(dir_fd_, layout::archived_marker_name(name));
}

bool RetentionManager::delete_oldest(Budget& b, bool unarchived) {
    const bool archive = config_.archive.enabled();
    bool blocked_by_hold = false;
    for (auto it = by_age_.begin(); it != by_age_.end();) {
        const FinishedFile& f = it->second;
        const std::string reason = b.reason(f);
        // Nothing over budget and this file not expired: stop, even if a later file
        // (of another stream, ending earlier) is expired already, so that no kept
        // file is ever older than a deleted one. It goes once this one has.
        if (reason.empty()) break;
        // Not archived yet: an expired file waits for its copy; a limit takes the
        // archived files first.
        const bool forced = archive && !archived(f.name);
        if (forced && (!unarchived || reason == "max_age")) {
            ++it;
            continue;
        }
        if (hold_.holds(f.name)) {
            if (hold_.readable() && held_logged_.insert(f.name).second)
                spdlog::info("retention: {} is on the legal hold list; not deleted ({})", f.name, reason);
            blocked_by_hold = true;
            ++it;
            continue;
        }
        const FinishedFile victim = f;
        if (!remove_files(victim)) {
            ++it;
            continue;
        }
        ++it;
        erase(victim.name);
        b.used -= std::min(b.used, victim.bytes);
        if (b.free != UINT64_MAX) b.free += victim.bytes;
        b.force_one = false;
        counters_.deleted_files.fetch_add(1, std::memory_order_relaxed);
        counters_.deleted_bytes.fetch_add(victim.bytes, std::memory_order_relaxed);
        if (forced) {
            counters_.deleted_unarchived.fetch_add(1, std::memory_order_relaxed);
            spdlog::error("retention: deleted {}/{} ({}, packets {} .. {}) before it was archived: {} ({}); the "
                          "archive is behind (linecap_archive_backlog_files)",
                          config_.directory, victim.name, human_bytes(victim.bytes), format_utc_ns(victim.first_ns),
                          format_utc_ns(victim.last_ns), reason, b.explain(reason, victim));
            continue;
        }
        spdlog::info("retention: deleted {}/{} ({}, packets {} .. {}): {} ({})", config_.directory, victim.name,
                     human_bytes(victim.bytes), format_utc_ns(victim.first_ns), format_utc_ns(victim.last_ns), reason,
                     b.explain(reason, victim));
    }
    return blocked_by_hold;
}

void RetentionManager::report_unmet(const Budget& b, bool blocked_by_hold) {
    const bool unmet = b.over_bytes() || b.short_of_free();
    counters_.budget_unmet.store(unmet ? 1 : 0, std::memory_order_relaxed);
    if (unmet && !unmet_logged_) {
        const std::string what = b.over_bytes() ? "using " + human_bytes(b.used) + " of " + human_bytes(b.limit)
                                                : "free " + human_bytes(b.free) + ", want " + human_bytes(b.free_wanted);
        spdlog::warn("retention: cannot meet the limits ({}): {}", what,
                     blocked_by_hold  ? (hold_.readable() ? "the remaining files are on the legal hold list"
                                                          : "the legal hold list cannot be read")
                     : by_age_.empty() ? "no finished file is left to delete (the files being written need the room)"
                                       : "finished files could not be deleted");
        unmet_logged_ = true;
    } else if (!unmet && unmet_logged_) {
        spdlog::info("retention: within the limits again");
        unmet_logged_ = false;
    }
}

void RetentionManager::enforce(uint64_t now_ns) {
    const uint64_t room = take_reports();
    refresh_hold();
    const bool active = enabled();
    if (room > 0 && !active && !room_without_budget_logged_) {
        spdlog::warn("retention: the output filesystem is full, but output.retention sets no limit, so no capture "
                     "file is deleted; packets are counted as disk_full until space is freed");
        room_without_budget_logged_ = true;
    }
    if (active) {
        Budget budget = measure(room, now_ns);
        if (budget.force_one) last_forced_ns_ = now_ns;
        bool blocked_by_hold = delete_oldest(budget, !config_.archive.enabled());
        if (config_.archive.enabled() && (budget.over_bytes() || budget.short_of_free() || budget.force_one))
            blocked_by_hold = delete_oldest(budget, true) || blocked_by_hold;
        report_unmet(budget, blocked_by_hold);
    } else {
        counters_.budget_unmet.store(0, std::memory_order_relaxed);
    }
    if (room == 0 && room_without_budget_logged_ && !active) {
        // A new full-disk episode logs again; without requests for a while it is over.
        room_without_budget_logged_ = false;
    }
    publish();
}

void RetentionManager::publish() {
    if (held_dirty_) {
        held_files_ = 0;
        if (hold_.configured())
            for (const auto& [key, f] : by_age_) held_files_ += hold_.holds(f.name) ? 1 : 0;
        held_dirty_ = false;
    }
    counters_.files.store(by_age_.size(), std::memory_order_relaxed);
    counters_.bytes.store(stored_bytes_, std::memory_order_relaxed);
    counters_.held_files.store(held_files_, std::memory_order_relaxed);
    counters_.oldest_packet_ns.store(by_age_.empty() ? 0 : by_age_.begin()->second.first_ns, std::memory_order_relaxed);
}

std::vector<FinishedFile> RetentionManager::files() const {
    std::vector<FinishedFile> out;
    out.reserve(by_age_.size());
    for (const auto& [key, f] : by_age_) out.push_back(f);
    return out;
}

// --- RetentionService -----------------------------------------------------------------

RetentionService::RetentionService(const OutputConfig& config, int dir_fd, RetentionEnvironment environment,
                                   RetentionCounters& counters)
    : BackgroundService({.name = "lc-retention", .who = "retention", .idle_priority = false}),
      manager_(config, dir_fd, std::move(environment), counters) {}

RetentionService::~RetentionService() { stop(); }

void RetentionService::add(FinishedFile file) {
    manager_.add(std::move(file));
    wake();
}

void RetentionService::request_room(uint64_t bytes) {
    manager_.request_room(bytes);
    wake();
}

// No wake: an index is under 1 % of its file; the next pass (at least once a second) sees it.
void RetentionService::sidecar_changed(const std::string& name) { manager_.sidecar_changed(name); }

void RetentionService::work() {
    std::unique_lock lock(mutex_);
    while (true) {
        cv_.wait_for(lock, kPeriod, [this] { return woken_ || stopping_; });
        const bool last = stopping_;
        woken_ = false;
        lock.unlock();
        manager_.enforce(utc_now_ns());
        lock.lock();
        if (last) return;
    }
}

}  // namespace linecap
