// The archive tier's writer (output.archive): the last stage of the pipeline
// (archive/pipeline.hpp) uploads every finished file to an S3-compatible object store, laid
// out as archive/object_layout.hpp says, and keeps the store's copy for max_age.
//
// A file is ready once it is finished, has its manifest (and its index with output.index,
// its compressed form with output.compress), carries no damage marker, is not archived
// yet (no NAME.archived) and is older than `after`. Its objects go up in this order, each
// whole or not at all (s3/upload.hpp) and each verified before the next:
//   1. the stored form (x.pcap, x.pcapng or x.pcap.zst), with linecap-sha256 (of its
//      bytes) and linecap-capture-sha256 (the manifest's SHA-256 of the capture bytes);
//   2. its index, NAME.idx, when there is one, with linecap-sha256;
//   3. its manifest, NAME.manifest, last: a reader counts a file archived only when this
//      object is there.
// Verified: before an object goes up its bytes are hashed and, for the stored form,
// checked against the manifest (a file whose bytes differ is not archived: the scrub
// marks it); the bytes sent are hashed on the way and must give that same SHA-256, and
// a HEAD must show the size and metadata that were sent. Then NAME.archived is written
// beside the file (local retention may now delete it).
//
// A kill or a crash at any point leaves no object that looks finished: an unfinished
// multipart upload is no object (the next start aborts what is left under PREFIX), and a
// capture object without its manifest object is not archived for any reader; the next
// start, finding no NAME.archived, uploads the file again from the start.
//
// A store that is down or refuses never reaches capture: the service runs on a thread of
// its own at idle CPU and I/O priority, a failed file is tried again after a backoff
// (1 s doubling to 5 min), each error counted by cause and logged at most once a minute
// per cause.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "archive/store_inventory.hpp"
#include "config/config.hpp"
#include "s3/client.hpp"
#include "util/background_service.hpp"
#include "util/counter.hpp"
#include "util/metric.hpp"

namespace linecap {

// Why an upload failed, one counter each (linecap_archive_upload_errors_total{cause}).
template <class Counter>
struct ArchiveCountersOf {
    Counter archived_files{};
    Counter archived_bytes{};          // every object uploaded and verified
    Counter backlog_files{};           // finished files not archived yet
    Counter backlog_bytes{};           // their stored forms
    Counter backlog_oldest_mtime_ns{};  // the oldest of them (its last write); 0: none
    Counter error_unreachable{};       // no answer: refused connection, timeout, TLS
    Counter error_denied{};            // 401/403: credentials, signature, access
    Counter error_no_bucket{};         // the bucket does not exist
    Counter error_server{};            // 5xx, 429 once the retries ran out
    Counter error_verify{};            // the stored object is not what was sent (deleted)
    Counter error_local{};             // the local file cannot be read or differs from its manifest
    Counter error_other{};
    Counter retries{};                 // requests sent again
    Counter expired_files{};           // deleted from the store by max_age

    template <class F, class... Group>
    static void fields(F&& f, Group&... g) {
        f(g.archived_files...);
        f(g.archived_bytes...);
        f(g.backlog_files...);
        f(g.backlog_bytes...);
        f(g.backlog_oldest_mtime_ns...);
        f(g.error_unreachable...);
        f(g.error_denied...);
        f(g.error_no_bucket...);
        f(g.error_server...);
        f(g.error_verify...);
        f(g.error_local...);
        f(g.error_other...);
        f(g.retries...);
        f(g.expired_files...);
    }
};
struct ArchiveCounters : ArchiveCountersOf<std::atomic<uint64_t>> {};
using ArchiveCounts = ArchiveCountersOf<uint64_t>;

inline constexpr FieldMetric<ArchiveCounts> kArchiveFilesMetric{
    {"linecap_archive_files_total",
     "Capture files archived (output.archive): stored form, index and manifest uploaded and verified.",
     MetricType::counter},
    &ArchiveCounts::archived_files};
inline constexpr FieldMetric<ArchiveCounts> kArchiveBytesMetric{
    {"linecap_archive_bytes_total", "Bytes of the objects uploaded to the archive and verified.", MetricType::counter},
    &ArchiveCounts::archived_bytes};
inline constexpr FieldMetric<ArchiveCounts> kArchiveBacklogFilesMetric{
    {"linecap_archive_backlog_files", "Finished capture files not archived yet.", MetricType::gauge},
    &ArchiveCounts::backlog_files};
inline constexpr FieldMetric<ArchiveCounts> kArchiveBacklogBytesMetric{
    {"linecap_archive_backlog_bytes", "Bytes of the finished capture files not archived yet.", MetricType::gauge},
    &ArchiveCounts::backlog_bytes};
inline double archive_backlog_age_seconds(const ArchiveCounts& c, uint64_t now_ns) {
    return c.backlog_oldest_mtime_ns != 0 && now_ns > c.backlog_oldest_mtime_ns
               ? static_cast<double>(now_ns - c.backlog_oldest_mtime_ns) / 1e9
               : 0;
}
inline constexpr MetricDecl kArchiveBacklogAgeMetric{
    "linecap_archive_backlog_oldest_age_seconds",
    "Age (since its last write) of the oldest finished capture file not archived yet; 0 when none waits.",
    MetricType::gauge};
inline constexpr FamilyMetric<ArchiveCounts, 7> kArchiveUploadErrorsMetric{
    {"linecap_archive_upload_errors_total",
     "Failed archive uploads of a file (each retried later), by cause: unreachable (no answer), denied "
     "(credentials, signature, access), no_bucket, server (5xx, 429), verify (the stored object differed; deleted), "
     "local (the local file unreadable or not its manifest's), other.",
     MetricType::counter},
    "cause",
    {{"unreachable", &ArchiveCounts::error_unreachable},
     {"denied", &ArchiveCounts::error_denied},
     {"no_bucket", &ArchiveCounts::error_no_bucket},
     {"server", &ArchiveCounts::error_server},
     {"verify", &ArchiveCounts::error_verify},
     {"local", &ArchiveCounts::error_local},
     {"other", &ArchiveCounts::error_other}}};
inline constexpr FieldMetric<ArchiveCounts> kArchiveRetriesMetric{
    {"linecap_archive_retries_total", "Archive requests sent again after a failure that can pass.",
     MetricType::counter},
    &ArchiveCounts::retries};
inline constexpr FieldMetric<ArchiveCounts> kArchiveExpiredFilesMetric{
    {"linecap_archive_expired_files_total",
     "Archived files deleted from the store by output.archive.max_age.", MetricType::counter},
    &ArchiveCounts::expired_files};

struct ArchiveServiceOptions {
    std::string directory;
    std::string file_template;              // output.file_template, for linecap-store.json
    unsigned rotate_interval_s = 0;
    ArchiveConfig archive;
    bool require_index = true;              // output.index
    bool require_compressed = false;        // output.compress
    std::string hold_file;                  // output.retention.hold_file: never expired from the store
    bool idle_priority = true;
    std::chrono::milliseconds rescan{5'000};  // the directory is looked at least this often
    std::chrono::milliseconds first_backoff{1'000};
    std::chrono::milliseconds max_backoff{300'000};
    uint64_t part_bytes = 16ull << 20;      // multipart above this
};

// Where the archive of this appliance is: the URL's bucket and prefix, the prefix the host
// name when the URL names only a bucket. Errors: the URL's (object_layout::parse_url).
Result<std::pair<std::string, std::string>> archive_bucket_and_prefix(const ArchiveConfig& archive);

// The credentials output.archive names: its file, else the environment.
Result<s3::Credentials> archive_credentials(const ArchiveConfig& archive);

// linecap-store.json: what a reader needs to read the names under PREFIX.
std::string store_description(const std::string& appliance, const std::string& file_template,
                              unsigned rotate_interval_s);

// The daemon's archiver thread, "lc-archive": looks at the directory (at start, when woken:
// a file came through the pipeline, when the next file comes of age, and every `rescan`)
// and uploads the ready files oldest first, `concurrency` at a time (one client each).
// stop() abandons the uploads in hand, a transfer in progress included; the next start
// redoes them.
class ArchiveService final : public BackgroundService {
public:
    // `archived(name)` on the archiver's thread once NAME.archived is written.
    using ArchivedHook = std::function<void(const std::string& name)>;

    ArchiveService(ArchiveServiceOptions options, ArchivedHook archived, ArchiveCounters& counters);
    ~ArchiveService();

    // Blocks until a look at the directory found nothing to upload now (tests).
    bool wait_idle(std::chrono::milliseconds timeout);

private:
    struct Outcome;

    void work() override;
    void on_stop() override;
    void on_wake() override;
    bool connect();                    // the store's description, leftovers aborted
    // One look at the directory: the backlog measured and, with `upload`, what is due
    // uploaded; returns when the next file comes of age (or max()).
    std::chrono::system_clock::time_point pass(bool upload);
    bool ready(const StoredFile& file) const;
    Outcome archive_file(s3::Client& client, const StoredFile& file);
    void expire(s3::Client& client);
    void count_failure(const std::string& cause, const std::string& message);
    // Waits D or until stopping; false when stopping.
    bool wait(std::chrono::milliseconds d);

    const ArchiveServiceOptions options_;
    const ArchivedHook archived_;
    ArchiveCounters& counters_;
    std::string bucket_;
    std::string prefix_;
    s3::Endpoint endpoint_;
    std::vector<std::unique_ptr<s3::Client>> clients_;  // one per concurrent upload
    bool connected_ = false;
    std::chrono::milliseconds backoff_;
    std::chrono::steady_clock::time_point retry_at_{};
    std::chrono::steady_clock::time_point next_expiry_{};
    std::set<std::string> local_failed_;   // not tried again in this run (the scrub marks them)
    std::map<std::string, std::chrono::steady_clock::time_point> logged_;  // cause → last logged
    std::map<std::string, unsigned> suppressed_;

    std::condition_variable stop_cv_;  // under mutex_: the uploads' waits (cv_ is the thread's own)
    std::condition_variable idle_cv_;  // under mutex_
    bool idle_ = false;
};

}  // namespace linecap
