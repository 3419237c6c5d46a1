// Retention: deleting the oldest finished capture files so that the output stays within
// its budgets (OutputConfig::retention), and knowing how far back the kept files reach.
//
// One RetentionManager per daemon (not per writer thread), driven by one thread of its
// own (RetentionService, "lc-retention") — never by a capture core, and not by the
// writer threads either, whose only part is to report each finished file (add) and a
// full disk (request_room): unlinking a large file can take long enough to back up the
// write blocks.
//
// Inventory: the store is listed once (archive/store_inventory.hpp: finished files; their
// packet times from the manifest, else from the file's first record and its mtime),
// then kept up to date from what the writer reports and what retention deletes. Files
// are ordered by their first packet (then name); in-progress files are never in it.
//
// Budgets, all optional (0 = off), checked after every finished file, on a full disk and
// at least once a second:
//   max_bytes       capture files kept (with their sidecars) + the files being written.
//                   With size rotation (rotate.size_mb) each stream reserves two rotation
//                   sizes — its current file and the next, opened the moment the current
//                   one is finished — so the total on disk stays under the budget at all
//                   times; with only interval rotation the files being written count at
//                   their current size, and the budget is restored as soon as retention
//                   has seen a finished file (milliseconds) and at least once a second
//   max_percent     the same total, as a share of the filesystem's size
//   min_free_bytes  free space on the filesystem (statvfs f_bavail), minus what the files
//                   being written may still grow by
//   max_age         a file whose LAST packet is older than this is deleted (so no packet
//                   younger than max_age is ever deleted for age)
// Deleting goes strictly oldest first (by first packet) across all ports and queues — for
// max_age too: an expired file waits for the older files before it (at most one rotation
// interval), so every kept file is newer than every deleted one and the store never has
// holes (except around held files). A capture file goes with its manifest
// (NAME.manifest) and index (NAME.idx). Every deletion is logged.
//
// With the archive tier on (output.archive), a file goes only once it is archived
// (NAME.archived, archive/archive_service.hpp): max_age waits for its archive copy, and a
// size or free-space limit deletes the oldest archived files first, skipping unarchived
// older ones. Only when no archived file is left and a limit must still win does an
// unarchived file go: each is logged as an error naming it and counted
// (linecap_archive_deleted_unarchived_files_total, alert LinecapArchiveDeletedUnarchived).
//
// Disk full (ENOSPC/EDQUOT on a write): when any budget is set, the oldest files are
// deleted until the free space reaches `room` (at least one file, at most one such
// forced deletion a second when statvfs says there is room already). With no budget
// set, nothing is ever deleted — the files are evidence — and the writer keeps counting
// disk_full drops until space is freed by someone else.
//
// Legal hold (hold_file): a text file, one entry a line, '#' starts a comment. An entry
// is an absolute path of a capture file or of a directory (everything below it is held),
// a file name relative to the output directory, or a shell pattern (fnmatch) of either.
// The list is re-read when it changes (mtime, size, inode). A held file is never deleted
// (logged once); when a budget cannot be met because of held files it is logged once and
// linecap_retention_budget_unmet is 1. If the hold file is configured but cannot be
// read, nothing at all is deleted until it can (logged): deleting a file that might be
// under hold is the one mistake retention must not make.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/config.hpp"
#include "archive/store_inventory.hpp"
#include "util/background_service.hpp"
#include "util/counter.hpp"
#include "util/metric.hpp"

namespace linecap {

// Retention's counters, written by the retention thread, read by metrics;
// Counter is std::atomic for the live counters, uint64_t for a snapshot (RetentionCounts).
template <class Counter>
struct RetentionCountersOf {
    Counter oldest_packet_ns{};     // first packet of the oldest kept file; 0 = none
    Counter files{};                // finished capture files kept
    Counter bytes{};                // their bytes, sidecars included
    Counter held_files{};           // of those, on the legal hold list
    Counter deleted_files{};
    Counter deleted_bytes{};
    Counter deleted_unarchived{};   // with output.archive: deleted before they were archived
    Counter budget_unmet{};         // 1 while a limit cannot be met

    template <class F, class... Group>
    static void fields(F&& f, Group&... g) {
        f(g.oldest_packet_ns...);
        f(g.files...);
        f(g.bytes...);
        f(g.held_files...);
        f(g.deleted_files...);
        f(g.deleted_bytes...);
        f(g.deleted_unarchived...);
        f(g.budget_unmet...);
    }
};
struct RetentionCounters : RetentionCountersOf<std::atomic<uint64_t>> {};
using RetentionCounts = RetentionCountersOf<uint64_t>;

// The metrics read from RetentionCounts, unlabelled. The horizon is computed from
// oldest_packet_ns and the time of the collection, so it grows by itself between deletions.
inline double retention_horizon_seconds(const RetentionCounts& c, uint64_t now_ns) {
    return c.oldest_packet_ns != 0 && now_ns > c.oldest_packet_ns
               ? static_cast<double>(now_ns - c.oldest_packet_ns) / 1e9
               : 0;
}
inline constexpr MetricDecl kRetentionHorizonMetric{
    "linecap_retention_horizon_seconds",
    "Age of the oldest packet still kept in a finished capture file (how far back a question can be answered); 0 "
    "when no file is kept.",
    MetricType::gauge};
inline constexpr FieldMetric<RetentionCounts> kRetentionFilesMetric{
    {"linecap_retention_files", "Finished capture files kept in the output directory.", MetricType::gauge},
    &RetentionCounts::files};
inline constexpr FieldMetric<RetentionCounts> kRetentionBytesMetric{
    {"linecap_retention_bytes", "Bytes of the finished capture files kept, manifests and indexes included.",
     MetricType::gauge},
    &RetentionCounts::bytes};
inline constexpr FieldMetric<RetentionCounts> kRetentionHeldFilesMetric{
    {"linecap_retention_held_files", "Kept capture files that are on the legal hold list.", MetricType::gauge},
    &RetentionCounts::held_files};
inline constexpr FieldMetric<RetentionCounts> kRetentionBudgetUnmetMetric{
    {"linecap_retention_budget_unmet",
     "1 while a retention limit cannot be met (the remaining files are on hold, the hold list is unreadable, or "
     "deleting failed).",
     MetricType::gauge},
    &RetentionCounts::budget_unmet};
inline constexpr FieldMetric<RetentionCounts> kRetentionDeletedFilesMetric{
    {"linecap_retention_deleted_files_total", "Capture files deleted by retention.", MetricType::counter},
    &RetentionCounts::deleted_files};
inline constexpr FieldMetric<RetentionCounts> kRetentionDeletedBytesMetric{
    {"linecap_retention_deleted_bytes_total", "Bytes deleted by retention (capture files and their sidecars).",
     MetricType::counter},
    &RetentionCounts::deleted_bytes};

inline constexpr FieldMetric<RetentionCounts> kArchiveDeletedUnarchivedMetric{
    {"linecap_archive_deleted_unarchived_files_total",
     "Capture files local retention deleted before they were archived (output.archive): a size or free-space limit "
     "had to win over the archive's backlog. Each is logged.",
     MetricType::counter},
    &RetentionCounts::deleted_unarchived};

struct FinishedFile {
    std::string name;            // in the output directory
    uint64_t bytes = 0;          // the capture file and its sidecars
    uint64_t first_ns = 0;       // first and last packet (UTC ns)
    uint64_t last_ns = 0;
    bool operator==(const FinishedFile&) const = default;
};

class HoldList {
public:
    HoldList() = default;
    HoldList(std::string path, std::string directory);

    bool configured() const { return !path_.empty(); }
    // Re-reads the list when it changed. Returns true when it was (re-)read or became
    // unreadable, i.e. when holds() may answer differently now.
    bool refresh();
    bool readable() const { return readable_; }
    const std::string& problem() const { return problem_; }
    size_t entries() const { return entries_.size(); }
    // Whether the file `name` in the output directory is held. An unreadable list holds
    // everything.
    bool holds(const std::string& name) const;

private:
    struct Entry {
        std::string pattern;     // absolute
        bool glob = false;
    };
    std::string path_;
    std::string directory_;      // as configured
    std::string real_directory_; // realpath, when it differs
    std::vector<Entry> entries_;
    bool readable_ = true;
    std::string problem_;
    bool stat_known_ = false;
    ino_t ino_ = 0;
    off_t size_ = 0;
    int64_t mtime_ns_ = 0;
};

struct FilesystemSpace {
    uint64_t free_bytes = 0;     // f_bavail × f_frsize
    uint64_t size_bytes = 0;     // f_blocks × f_frsize
};

// The bytes of the files being written: actual, and counted against the budgets
// (>= actual; see max_bytes above).
struct InProgressBytes {
    uint64_t actual = 0;
    uint64_t reserved = 0;
};

struct RetentionEnvironment {
    std::function<std::optional<FilesystemSpace>()> filesystem;  // empty: statvfs of the directory
    std::function<InProgressBytes()> in_progress;                // empty: none
};

class RetentionManager {
public:
    RetentionManager(const OutputConfig& config, int dir_fd, RetentionEnvironment environment,
                     RetentionCounters& counters);

    bool enabled() const;     // any budget set

    // Any thread.
    void add(FinishedFile file);
    void request_room(uint64_t bytes);
    void sidecar_changed(const std::string& name);  // re-read the file's size on disk

    // The retention thread only (or a test). The first call scans the directory.
    void enforce(uint64_t now_ns);
    std::vector<FinishedFile> files() const;  // the inventory, oldest first

private:
    using Key = std::pair<uint64_t, std::string>;  // first_ns, name

    struct Budget;  // one pass's limits and how far the store is from them

    void scan();
    void insert(FinishedFile file);
    void erase(const std::string& name);
    void refresh_bytes(const std::string& name);
    uint64_t take_reports();  // what the writers reported since the last pass; returns the room asked for
    void refresh_hold();
    Budget measure(uint64_t room, uint64_t now_ns) const;
    // true when a held file stood in the way. With `unarchived`, the files the archive has
    // not got yet are deleted too (a limit must win); without, they are skipped.
    bool delete_oldest(Budget& budget, bool unarchived);
    bool archived(const std::string& name) const;
    void report_unmet(const Budget& budget, bool blocked_by_hold);
    bool remove_files(const FinishedFile& file);
    void publish();
    std::optional<FilesystemSpace> filesystem() const;

    const OutputConfig config_;
    const int dir_fd_;
    const LocalDirectoryStore store_;
    const RetentionEnvironment env_;
    RetentionCounters& counters_;

    std::mutex pending_mutex_;
    std::vector<FinishedFile> pending_;
    std::vector<std::string> pending_sidecars_;  // guarded by pending_mutex_
    uint64_t room_requested_ = 0;  // guarded by pending_mutex_

    bool scanned_ = false;
    std::map<Key, FinishedFile> by_age_;
    std::unordered_map<std::string, uint64_t> first_ns_by_name_;
    uint64_t stored_bytes_ = 0;
    HoldList hold_;
    bool held_dirty_ = true;
    uint64_t held_files_ = 0;
    std::set<std::string> held_logged_;
    std::set<std::string> delete_failed_logged_;
    bool unmet_logged_ = false;
    bool hold_unreadable_logged_ = false;
    bool room_without_budget_logged_ = false;
    uint64_t last_forced_ns_ = 0;
};

// The retention thread (lc-retention, at normal priority: it frees the room the writer
// needs): enforce() after every wake (a finished file, a full disk) and at least once a
// second; stop() makes one last pass. Its manager counts into `counters`.
class RetentionService final : public BackgroundService {
public:
    RetentionService(const OutputConfig& config, int dir_fd, RetentionEnvironment environment,
                     RetentionCounters& counters);
    ~RetentionService();

    // Any thread.
    void add(FinishedFile file);
    void request_room(uint64_t bytes);
    void sidecar_changed(const std::string& name);

    RetentionManager& manager() { return manager_; }

private:
    void work() override;

    RetentionManager manager_;
};

}  // namespace linecap
