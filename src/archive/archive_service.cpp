#include "archive/archive_service.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <thread>

#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "archive/object_layout.hpp"
#include "archive/retention.hpp"
#include "s3/credentials.hpp"
#include "s3/upload.hpp"
#include "util/errno_text.hpp"
#include "util/human_bytes.hpp"
#include "util/sha256.hpp"
#include "util/unique_fd.hpp"
#include "util/utc_time.hpp"

namespace linecap {
namespace {

constexpr size_t kHashChunk = 1u << 20;
constexpr auto kLogEvery = std::chrono::minutes(1);
constexpr auto kExpiryEvery = std::chrono::minutes(10);

// The SHA-256 (hex) and size of the file at `path`.
Result<std::pair<std::string, uint64_t>> hash_file(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) return runtime_error(path + ": " + errno_text(errno));
    ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    std::vector<uint8_t> chunk(kHashChunk);
    Sha256 hash;
    uint64_t size = 0;
    for (;;) {
        const ssize_t n = ::read(fd.get(), chunk.data(), chunk.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return runtime_error(path + ": " + errno_text(errno));
        if (n == 0) break;
        hash.update({chunk.data(), static_cast<size_t>(n)});
        size += static_cast<uint64_t>(n);
    }
    const Sha256::Digest digest = hash.finish();
    if (!hash.ok()) return runtime_error("sha256 failed");
    return std::make_pair(Sha256::hex(digest), size);
}

// Which counter a failed request goes to.
std::string cause_of(const s3::Failure& failure) {
    if (failure.http_status == 0) return "unreachable";
    if (failure.http_status == 401 || failure.http_status == 403) return "denied";
    if (failure.code == "NoSuchBucket") return "no_bucket";
    if (failure.http_status >= 500 || failure.http_status == 429) return "server";
    return "other";
}

// "2026-12-03T11:40:18.000Z" → UTC ns; 0 when it does not read.
uint64_t parse_last_modified(const std::string& text) {
    std::tm tm{};
    const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (end == nullptr) return 0;
    const time_t t = ::timegm(&tm);
    return t > 0 ? static_cast<uint64_t>(t) * 1'000'000'000ull : 0;
}

// The appliance's name: the default prefix, and what linecap-store.json names.
std::string host_name() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) return {};
    return host;
}

}  // namespace

Result<std::pair<std::string, std::string>> archive_bucket_and_prefix(const ArchiveConfig& archive) {
    auto location = object_layout::parse_url(archive.url);
    if (!location) return location.error();
    std::string prefix = location->prefix.empty() ? host_name() : location->prefix;
    if (prefix.empty())
        return runtime_error("archive URL '" + archive.url + "' names no prefix and the host name is unknown");
    return std::make_pair(location->bucket, prefix);
}

Result<s3::Credentials> archive_credentials(const ArchiveConfig& archive) {
    if (!archive.credentials_file.empty()) return s3::read_credentials_file(archive.credentials_file);
    return s3::credentials_from_environment();
}

std::string store_description(const std::string& appliance, const std::string& file_template,
                              unsigned rotate_interval_s) {
    const nlohmann::ordered_json description{{"format", 1},
                                             {"appliance", appliance},
                                             {"file_template", file_template},
                                             {"rotate_interval_s", rotate_interval_s}};
    return description.dump() + "\n";
}

struct ArchiveService::Outcome {
    std::string name;
    Status status;
    std::string cause;     // when failed
    uint64_t bytes = 0;    // uploaded and verified
};

ArchiveService::ArchiveService(ArchiveServiceOptions options, ArchivedHook archived, ArchiveCounters& counters)
    : BackgroundService({.name = "lc-archive", .who = "archive", .idle_priority = options.idle_priority}),
      options_(std::move(options)),
      archived_(std::move(archived)),
      counters_(counters),
      backoff_(options_.first_backoff) {
    endpoint_.url = options_.archive.endpoint;
    endpoint_.region = options_.archive.region;
    endpoint_.path_style = options_.archive.path_style;
    endpoint_.ca_file = options_.archive.ca_file;
}

ArchiveService::~ArchiveService() { stop(); }

void ArchiveService::on_stop() { stop_cv_.notify_all(); }

void ArchiveService::on_wake() { idle_ = false; }

bool ArchiveService::wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return idle_cv_.wait_for(lock, timeout, [this] { return idle_; });
}

bool ArchiveService::wait(std::chrono::milliseconds d) {
    std::unique_lock lock(mutex_);
    return !stop_cv_.wait_for(lock, d, [this] { return stopping_.load(); });
}

void ArchiveService::count_failure(const std::string& cause, const std::string& message) {
    std::atomic<uint64_t>* counter = cause == "unreachable" ? &counters_.error_unreachable
                                     : cause == "denied"    ? &counters_.error_denied
                                     : cause == "no_bucket" ? &counters_.error_no_bucket
                                     : cause == "server"    ? &counters_.error_server
                                     : cause == "verify"    ? &counters_.error_verify
                                     : cause == "local"     ? &counters_.error_local
                                                            : &counters_.error_other;
    counter->fetch_add(1, std::memory_order_relaxed);
    // Once a minute per cause: a store that is down for a day writes 1440 lines, not millions.
    const auto now = std::chrono::steady_clock::now();
    const auto last = logged_.find(cause);
    if (last != logged_.end() && now - last->second < kLogEvery) {
        ++suppressed_[cause];
        return;
    }
    logged_[cause] = now;
    const unsigned more = std::exchange(suppressed_[cause], 0);
    spdlog::error("archive: s3://{}/{}: {} ({}){}; capture goes on, retried later", bucket_, prefix_, message, cause,
                  more ? fmt::format(" and {} more like it in the last minute", more) : std::string());
}

// At start and after a failure: the description, and what an earlier run left unfinished.
bool ArchiveService::connect() {
    if (clients_.empty()) {
        auto where = archive_bucket_and_prefix(options_.archive);
        if (!where) {
            count_failure("other", where.error().message);
            return false;
        }
        bucket_ = where->first;
        prefix_ = where->second;
        auto credentials = archive_credentials(options_.archive);
        if (!credentials) {
            count_failure("denied", credentials.error().message);
            return false;
        }
        for (unsigned i = 0; i < std::max(1u, options_.archive.concurrency); ++i) {
            clients_.push_back(std::make_unique<s3::Client>(endpoint_, credentials.value(), bucket_));
            clients_.back()->set_cancel(&stopping_);  // stop() does not wait for a stalled store
        }
    }
    s3::Client& client = *clients_.front();
    const std::string appliance = host_name();
    const std::string description =
        store_description(appliance.empty() ? prefix_ : appliance, options_.file_template, options_.rotate_interval_s);
    const std::string key = object_layout::object_key(prefix_, object_layout::kStoreDescriptionName);
    if (Status s = client.put_object(key, description, {{object_layout::kMetaSha256,
                                                         Sha256::of({reinterpret_cast<const uint8_t*>(description.data()),
                                                                     description.size()})}});
        !s) {
        count_failure(cause_of(client.last_failure()), s.error().message);
        return false;
    }
    auto aborted = s3::abort_uploads(client, prefix_ + "/");
    if (!aborted) {
        count_failure(cause_of(client.last_failure()), aborted.error().message);
        return false;
    }
    spdlog::info("archive: archiving {} to s3://{}/{} at {}{}", options_.directory, bucket_, prefix_, endpoint_.url,
                 aborted.value() ? fmt::format("; {} unfinished uploads of an earlier run aborted", aborted.value())
                                 : std::string());
    return true;
}

bool ArchiveService::ready(const StoredFile& file) const {
    if (file.archived || !file.manifest || file.damaged || file.compression_unfinished) return false;
    if (options_.require_index && !file.index) return false;
    if (options_.require_compressed && !file.compressed) return false;
    return !local_failed_.contains(file.name);
}

ArchiveService::Outcome ArchiveService::archive_file(s3::Client& client, const StoredFile& file) {
    Outcome out{.name = file.name};
    const auto fail = [&](std::string cause, std::string why) {
        out.cause = std::move(cause);
        out.status = runtime_error(file.path + ": " + why);
        return out;
    };
    UniqueFd dir_fd(::open(options_.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd) return fail("local", errno_text(errno));
    const ManifestRead read = read_manifest(dir_fd.get(), file.name);
    if (!read.ok()) return fail("local", read.problem.empty() ? "no manifest" : read.problem);
    const Manifest& manifest = read.manifest;
    const std::string& want = file.compressed ? (manifest.compressed ? manifest.compressed->sha256 : std::string())
                                              : manifest.sha256;
    if (want.empty()) return fail("local", "its manifest records no compressed form");

    s3::UploadOptions upload{.part_bytes = options_.part_bytes,
                             .max_bytes_per_second = options_.archive.max_bytes_per_second /
                                                     std::max(1u, options_.archive.concurrency),
                             .wait = [this](std::chrono::milliseconds d) { return wait(d); },
                             .on_retry = [this] { counters_.retries.fetch_add(1, std::memory_order_relaxed); }};
    // One object: hashed here, sent, the bytes sent hashed again; all three the same.
    const auto put = [&](const std::string& name, s3::Metadata metadata,
                         const std::string& expected_sha) -> std::optional<Outcome> {
        const std::string path = options_.directory + "/" + name;
        auto local = hash_file(path);
        if (!local) return fail("local", local.error().message);
        if (!expected_sha.empty() && local->first != expected_sha)
            return fail("local", name + ": its bytes differ from its manifest (sha256 " + local->first +
                                     "); not archived, the scrub marks it");
        metadata[object_layout::kMetaSha256] = local->first;
        const std::string key = object_layout::object_key(prefix_, name);
        auto sent = s3::upload_file(client, path, key, metadata, upload);
        if (!sent) {
            const std::string& message = sent.error().message;
            return fail(message.find("the stored object differs") != std::string::npos ? "verify"
                                                                                     : cause_of(client.last_failure()),
                        message);
        }
        if (sent->sha256 != local->first) {
            (void)client.delete_object(key);
            return fail("verify", name + ": the bytes sent (sha256 " + sent->sha256 + ") are not the file's; deleted");
        }
        out.bytes += sent->bytes;
        return std::nullopt;
    };
    if (auto failed = put(file.stored_name, {{object_layout::kMetaCaptureSha256, manifest.sha256}}, want)) return *failed;
    if (file.index)
        if (auto failed = put(layout::index_name(file.name), {}, "")) return *failed;
    if (auto failed = put(layout::manifest_name(file.name), {}, "")) return *failed;

    const std::string line = format_utc_ns(utc_now_ns()) + " " +
                             s3::object_url(client.bucket(), object_layout::object_key(prefix_, file.stored_name)) + "\n";
    if (const IoStatus s = layout::atomic_write(dir_fd.get(), layout::archived_marker_name(file.name),
                                                {reinterpret_cast<const uint8_t*>(line.data()), line.size()}, 0640);
        !s.ok())
        return fail("local", layout::archived_marker_name(file.name) + ": " + s.message());
    // Deleted by retention while it was uploaded (a limit had to win): no marker without its file.
    if (!layout::exists_at(dir_fd.get(), file.stored_name))
        ::unlinkat(dir_fd.get(), layout::archived_marker_name(file.name).c_str(), 0);
    return out;
}

// max_age: the objects of every file archived longer ago than that, its manifest first
// (a reader then no longer counts the file), except the files on the legal hold list.
void ArchiveService::expire(s3::Client& client) {
    if (options_.archive.max_age_s == 0) return;
    const uint64_t now = utc_now_ns();
    const uint64_t age_ns = options_.archive.max_age_s * 1'000'000'000ull;
    if (now <= age_ns) return;
    HoldList hold(options_.hold_file, options_.directory);
    hold.refresh();
    if (hold.configured() && !hold.readable()) {
        spdlog::warn("archive: legal hold list {}; nothing expires from the archive until it can be read",
                     hold.problem());
        return;
    }
    std::vector<std::string> expired;
    std::set<std::string> keys;
    std::string token;
    do {
        auto page = client.list_objects(prefix_ + "/", token);
        if (!page) {
            count_failure(cause_of(client.last_failure()), page.error().message);
            return;
        }
        for (const s3::ObjectInfo& o : page->objects) {
            const std::string name(object_layout::name_under(prefix_, o.key));
            keys.insert(name);
            const auto capture = layout::capture_name_of_manifest(name);
            if (!capture) continue;
            const uint64_t modified = parse_last_modified(o.last_modified);
            if (modified != 0 && modified < now - age_ns && !hold.holds(*capture)) expired.push_back(*capture);
        }
        token = page->next_token;
    } while (!token.empty() && !stopping_);
    for (const std::string& capture : expired) {
        if (stopping_) return;
        // The manifest first: a kill between the deletions leaves objects no reader counts.
        for (const std::string& name : {layout::manifest_name(capture), layout::index_name(capture),
                                        layout::compressed_name(capture), capture}) {
            if (!keys.contains(name)) continue;
            if (Status s = client.delete_object(object_layout::object_key(prefix_, name)); !s) {
                count_failure(cause_of(client.last_failure()), s.error().message);
                return;
            }
        }
        counters_.expired_files.fetch_add(1, std::memory_order_relaxed);
        spdlog::info("archive: s3://{}/{}/{} expired (archived more than {} s ago): deleted from the archive", bucket_,
                     prefix_, capture, options_.archive.max_age_s);
    }
}

std::chrono::system_clock::time_point ArchiveService::pass(bool upload) {
    using Clock = std::chrono::system_clock;
    auto next_due = Clock::time_point::max();
    const LocalDirectoryStore store(options_.directory);
    const Result<StoreInventory> inventory = store.list({});
    if (!inventory) {
        spdlog::warn("archive: {}", inventory.error().message);
        return next_due;
    }
    // The backlog: every finished file not archived yet, ready or not.
    std::vector<const StoredFile*> due;
    uint64_t backlog_files = 0, backlog_bytes = 0, oldest = 0;
    const int64_t now_ns = static_cast<int64_t>(utc_now_ns());
    const int64_t after_ns = static_cast<int64_t>(options_.archive.after_s * 1'000'000'000ull);
    for (const StoredFile& f : inventory->files) {
        if (f.archived) continue;
        ++backlog_files;
        backlog_bytes += f.stored_size;
        const uint64_t mtime = static_cast<uint64_t>(std::max<int64_t>(f.mtime_ns, 1));
        oldest = oldest == 0 ? mtime : std::min(oldest, mtime);
        if (!ready(f)) continue;
        if (now_ns - f.mtime_ns < after_ns) {
            next_due = std::min(next_due, Clock::time_point(std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::nanoseconds(f.mtime_ns + after_ns))));
            continue;
        }
        due.push_back(&f);
    }
    counters_.backlog_files.store(backlog_files, std::memory_order_relaxed);
    counters_.backlog_bytes.store(backlog_bytes, std::memory_order_relaxed);
    counters_.backlog_oldest_mtime_ns.store(oldest, std::memory_order_relaxed);
    if (!upload) return next_due;
    // Oldest first: they are the ones local retention deletes next.
    std::sort(due.begin(), due.end(), [](const StoredFile* a, const StoredFile* b) {
        return a->mtime_ns != b->mtime_ns ? a->mtime_ns < b->mtime_ns : a->name < b->name;
    });

    for (size_t at = 0; at < due.size() && !stopping_;) {
        const size_t batch = std::min(clients_.size(), due.size() - at);
        std::vector<Outcome> outcomes(batch);
        {
            std::vector<std::thread> uploads;
            for (size_t i = 1; i < batch; ++i)
                uploads.emplace_back([&, i] { outcomes[i] = archive_file(*clients_[i], *due[at + i]); });
            outcomes[0] = archive_file(*clients_[0], *due[at]);
            for (std::thread& t : uploads) t.join();
        }
        bool store_failed = false;
        for (size_t i = 0; i < batch; ++i) {
            const Outcome& o = outcomes[i];
            if (!o.status) {
                if (stopping_) continue;  // abandoned, not failed
                count_failure(o.cause, o.status.error().message);
                if (o.cause == "local") local_failed_.insert(o.name);
                else store_failed = true;
                continue;
            }
            counters_.archived_files.fetch_add(1, std::memory_order_relaxed);
            counters_.archived_bytes.fetch_add(o.bytes, std::memory_order_relaxed);
            counters_.backlog_files.fetch_sub(std::min<uint64_t>(1, counters_.backlog_files.load()),
                                              std::memory_order_relaxed);
            counters_.backlog_bytes.fetch_sub(std::min(due[at + i]->stored_size, counters_.backlog_bytes.load()),
                                              std::memory_order_relaxed);
            spdlog::debug("archive: {} archived ({})", due[at + i]->path, human_bytes(o.bytes));
            if (archived_) archived_(o.name);
        }
        at += batch;
        if (store_failed) {
            // The store is down or refuses: the rest waits for the backoff.
            retry_at_ = std::chrono::steady_clock::now() + backoff_;
            backoff_ = std::min(backoff_ * 2, options_.max_backoff);
            connected_ = false;
            return next_due;
        }
        backoff_ = options_.first_backoff;
    }
    if (std::chrono::steady_clock::now() >= next_expiry_ && !stopping_) {
        next_expiry_ = std::chrono::steady_clock::now() + kExpiryEvery;
        expire(*clients_.front());
    }
    return next_due;
}

void ArchiveService::work() {
    for (;;) {
        {
            const std::lock_guard lock(mutex_);
            if (stopping_) break;
            woken_ = false;
        }
        if (std::chrono::steady_clock::now() >= retry_at_ && !connected_) {
            connected_ = connect();
            if (!connected_) {
                retry_at_ = std::chrono::steady_clock::now() + backoff_;
                backoff_ = std::min(backoff_ * 2, options_.max_backoff);
            }
        }
        // The backlog is measured also while the store is away: it is what the alert watches.
        const auto next_due = pass(connected_ && std::chrono::steady_clock::now() >= retry_at_);
        std::unique_lock lock(mutex_);
        if (stopping_) break;
        const bool backing_off = std::chrono::steady_clock::now() < retry_at_;
        if (!woken_ && !backing_off) {
            idle_ = true;
            idle_cv_.notify_all();
        }
        auto until = std::min(next_due, std::chrono::system_clock::now() + options_.rescan);
        if (backing_off)
            until = std::min(until, std::chrono::system_clock::now() +
                                        std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                            retry_at_ - std::chrono::steady_clock::now()));
        // A wake while backing off (a file finished) does not cut the backoff short.
        cv_.wait_until(lock, until, [this, backing_off] { return stopping_ || (woken_ && !backing_off); });
    }
    const std::lock_guard lock(mutex_);
    idle_ = true;
    idle_cv_.notify_all();
}

}  // namespace linecap
