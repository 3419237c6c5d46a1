#include "archive/layout.hpp"

#include <fcntl.h>
#include <linux/limits.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>  // renameat2
#include <ctime>
#include <mutex>
#include <utility>
#include <vector>

namespace linecap::layout {
namespace {

constexpr std::string_view kPcap = ".pcap";
constexpr std::string_view kPcapng = ".pcapng";
constexpr std::string_view kHidden = ".";
constexpr std::string_view kInProgressSuffix = ".part";
constexpr std::string_view kManifestSuffix = ".manifest";
constexpr std::string_view kIndexSuffix = ".idx";
constexpr std::string_view kDamagedSuffix = ".damaged";
constexpr std::string_view kManifestPendingSuffix = ".manifest-pending";
constexpr std::string_view kCorruptSuffix = ".corrupt";
constexpr std::string_view kCompressedSuffix = ".zst";
constexpr std::string_view kArchivedSuffix = ".archived";
constexpr std::string_view kRecovered = "recovered";
constexpr std::string_view kTemporaryInfix = ".tmp.";
constexpr size_t kTemporaryUniqueChars = 6;
constexpr std::string_view kUniqueAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

// The longest name the directory can hold for a stem: the temporary of the manifest of a
// recovered file whose plain and recovered names were both taken,
// ".STEM-999-recovered-999.pcapng.manifest.tmp.XXXXXX".
constexpr size_t decimal_digits(unsigned v) { return v < 10 ? 1 : 1 + decimal_digits(v / 10); }
constexpr size_t kAlternativeBytes = 1 + decimal_digits(kMaxAlternatives - 1);  // "-999"
constexpr size_t kMaxAffixBytes = kHidden.size() + kAlternativeBytes + 1 + kRecovered.size() + kAlternativeBytes +
                                  kPcapng.size() + std::max(kManifestSuffix.size(), kCompressedSuffix.size()) +
                                  kTemporaryInfix.size() +
                                  kTemporaryUniqueChars;
static_assert(kMaxFileStemBytes + kMaxAffixBytes <= NAME_MAX,
              "config/file_template.hpp's kMaxFileStemBytes leaves no room for the directory's affixes");

// What the writer and recovery append to a rendered stem: "-<n>", "-recovered".
bool is_name_suffix(std::string_view rest) {
    while (!rest.empty()) {
        if (rest[0] != '-') return false;
        rest.remove_prefix(1);
        if (rest.starts_with(kRecovered)) {
            rest.remove_prefix(kRecovered.size());
            continue;
        }
        size_t n = 0;
        while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
        if (n == 0) return false;
        rest.remove_prefix(n);
    }
    return true;
}

// "x.pcap" → "x-<infix>.pcap". A leading dot is a hidden name, not an extension. Built
// with append() rather than operator+ chains, which GCC 12 at -O3 flags with a false
// -Wrestrict.
std::string insert_before_extension(std::string_view name, std::string_view infix) {
    size_t dot = name.rfind('.');
    if (dot == std::string_view::npos || dot == 0) dot = name.size();
    std::string out(name.substr(0, dot));
    out.append("-").append(infix).append(name.substr(dot));
    return out;
}

std::string with_suffix(std::string_view name, std::string_view suffix) {
    std::string out(name);
    out.append(suffix);
    return out;
}

std::optional<std::string> without_suffix(std::string_view name, std::string_view suffix) {
    if (name.size() <= suffix.size() || !name.ends_with(suffix) || name.starts_with(kHidden)) return std::nullopt;
    return std::string(name.substr(0, name.size() - suffix.size()));
}

// "a character device", …: for the message that refuses to replace it.
const char* describe_type(mode_t mode) {
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

std::string unique_suffix() {
    unsigned char random[kTemporaryUniqueChars] = {};
    if (::getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
        // Never expected (getrandom blocks only before the pool is initialised); the
        // O_EXCL create settles any collision of this weaker fallback.
        const uint64_t mix = static_cast<uint64_t>(::getpid()) * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(::time(nullptr));
        for (size_t i = 0; i < sizeof random; ++i) random[i] = static_cast<unsigned char>(mix >> (8 * i));
    }
    std::string out;
    for (const unsigned char r : random) out += kUniqueAlphabet[r % kUniqueAlphabet.size()];
    return out;
}

}  // namespace

// --- finished capture files -----------------------------------------------------------

std::string_view extension(FileKind format) { return format == FileKind::pcapng ? kPcapng : kPcap; }

std::optional<FileKind> capture_format(std::string_view name) {
    if (name.empty() || name.starts_with(kHidden)) return std::nullopt;
    if (name.ends_with(kPcap)) return FileKind::pcap;
    if (name.ends_with(kPcapng)) return FileKind::pcapng;
    return std::nullopt;
}

bool is_capture_name(std::string_view name) { return capture_format(name).has_value(); }

std::string capture_name(const FileTemplate& file_template, uint64_t first_ts_ns, const StreamId& stream,
                         uint64_t seq, FileKind format, unsigned alternative) {
    std::string name = file_template.render(first_ts_ns, stream.port, stream.queue, seq);
    name.append(extension(format));
    return numbered_name(name, alternative);
}

std::optional<ParsedName> parse_capture_name(const FileTemplate& file_template, std::string_view name) {
    const std::optional<FileKind> format = capture_format(name);
    if (!format) return std::nullopt;
    return file_template.parse(name.substr(0, name.size() - extension(*format).size()), is_name_suffix);
}

std::string numbered_name(std::string_view name, unsigned n) {
    return n == 0 ? std::string(name) : insert_before_extension(name, std::to_string(n));
}

std::string recovered_name(std::string_view final_name) { return insert_before_extension(final_name, kRecovered); }

std::string corrupt_name(std::string_view final_name) { return with_suffix(final_name, kCorruptSuffix); }

// --- files being written --------------------------------------------------------------

std::string in_progress_name(std::string_view final_name) {
    std::string name(kHidden);
    name.append(final_name).append(kInProgressSuffix);
    return name;
}

std::optional<std::string> final_name_of_in_progress(std::string_view name) {
    const size_t affixes = kHidden.size() + kInProgressSuffix.size();
    if (name.size() <= affixes || !name.starts_with(kHidden) || !name.ends_with(kInProgressSuffix))
        return std::nullopt;
    return std::string(name.substr(kHidden.size(), name.size() - affixes));
}

// --- sidecars -------------------------------------------------------------------------

std::string manifest_name(std::string_view capture) { return with_suffix(capture, kManifestSuffix); }
std::string index_name(std::string_view capture) { return with_suffix(capture, kIndexSuffix); }

std::optional<std::string> capture_name_of_manifest(std::string_view name) {
    return without_suffix(name, kManifestSuffix);
}
std::optional<std::string> capture_name_of_index(std::string_view name) { return without_suffix(name, kIndexSuffix); }

std::string damaged_marker_name(std::string_view capture) { return std::string(capture) + std::string(kDamagedSuffix); }
std::optional<std::string> capture_name_of_damaged_marker(std::string_view name) {
    return without_suffix(name, kDamagedSuffix);
}

std::string manifest_pending_name(std::string_view capture) { return with_suffix(capture, kManifestPendingSuffix); }
std::optional<std::string> capture_name_of_manifest_pending(std::string_view name) {
    return without_suffix(name, kManifestPendingSuffix);
}

std::string archived_marker_name(std::string_view capture) { return with_suffix(capture, kArchivedSuffix); }
std::optional<std::string> capture_name_of_archived_marker(std::string_view name) {
    return without_suffix(name, kArchivedSuffix);
}

std::array<std::string, 6> sidecar_names(std::string_view capture) {
    return {manifest_name(capture),     index_name(capture),           damaged_marker_name(capture),
            compressed_name(capture),   manifest_pending_name(capture), archived_marker_name(capture)};
}

// --- compressed capture files ---------------------------------------------------------

std::string compressed_name(std::string_view capture) { return with_suffix(capture, kCompressedSuffix); }

std::optional<std::string> capture_name_of_compressed(std::string_view name) {
    std::optional<std::string> capture = without_suffix(name, kCompressedSuffix);
    if (capture && !is_capture_name(*capture)) return std::nullopt;
    return capture;
}

std::optional<std::string> stored_capture_name(std::string_view name) {
    if (is_capture_name(name)) return std::string(name);
    return capture_name_of_compressed(name);
}

// --- temporaries ----------------------------------------------------------------------

std::optional<std::string> final_name_of_temporary(std::string_view name) {
    const size_t tail = kTemporaryInfix.size() + kTemporaryUniqueChars;
    if (name.size() <= kHidden.size() + tail || !name.starts_with(kHidden)) return std::nullopt;
    const std::string_view end = name.substr(name.size() - tail);
    if (!end.starts_with(kTemporaryInfix)) return std::nullopt;
    for (const char c : end.substr(kTemporaryInfix.size()))
        if (kUniqueAlphabet.find(c) == std::string_view::npos) return std::nullopt;
    return std::string(name.substr(kHidden.size(), name.size() - kHidden.size() - tail));
}

IoStatus open_parent(const std::string& path, UniqueFd& dir, std::string& name) {
    const size_t slash = path.rfind('/');
    const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    name = slash == std::string::npos ? path : path.substr(slash + 1);
    if (name.empty() || name == "." || name == "..") return IoStatus::refused("the path does not name a file");
    dir.reset(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    return dir ? IoStatus{} : IoStatus::failure("open directory", errno);
}

std::optional<std::string> not_replaceable(int dir_fd, std::string_view name) {
    struct stat st {};
    if (::fstatat(dir_fd, std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISREG(st.st_mode))
        return std::nullopt;
    return std::string("exists and is ") + describe_type(st.st_mode) + "; only a regular file is replaced";
}

namespace {

// Temporaries whose removal failed: given up on a volume that was failing at that moment
// (the rename and then the unlink hit its EIO). Each AtomicFile opened afterwards tries
// them again, so a volume that recovers under a running daemon is left clean without
// waiting for the next start's recovery; nothing else names them, since their owners have
// given them up. Kept by path, not by directory descriptor: a held descriptor would keep
// the failed volume's file system from being unmounted for repair.
class AbandonedTemporaries {
public:
    void add(int dir_fd, const std::string& name) {
        char link[32];
        std::snprintf(link, sizeof link, "/proc/self/fd/%d", dir_fd);
        char dir[PATH_MAX];
        const ssize_t n = ::readlink(link, dir, sizeof dir);
        if (n <= 0 || static_cast<size_t>(n) >= sizeof dir) return;  // left to recovery
        const std::lock_guard lock(mutex_);
        if (paths_.size() >= kLimit) return;
        paths_.push_back(std::string(dir, static_cast<size_t>(n)) + "/" + name);
        any_.store(true, std::memory_order_release);
    }

    void retry() {
        if (!any_.load(std::memory_order_acquire)) return;
        const std::lock_guard lock(mutex_);
        std::erase_if(paths_, [](const std::string& path) { return ::unlink(path.c_str()) == 0 || errno == ENOENT; });
        any_.store(!paths_.empty(), std::memory_order_release);
    }

private:
    // A volume failing for long gives up one temporary per file at most; past this many,
    // they wait for the next start's recovery like any stale temporary.
    static constexpr size_t kLimit = 256;
    std::atomic<bool> any_{false};
    std::mutex mutex_;
    std::vector<std::string> paths_;
};

AbandonedTemporaries& abandoned_temporaries() {
    static AbandonedTemporaries list;
    return list;
}

}  // namespace

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : dir_fd_(std::move(other.dir_fd_)), fd_(std::move(other.fd_)), final_name_(std::move(other.final_name_)),
      temp_name_(std::exchange(other.temp_name_, {})) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
    if (this != &other) {
        discard();
        dir_fd_ = std::move(other.dir_fd_);
        fd_ = std::move(other.fd_);
        final_name_ = std::move(other.final_name_);
        temp_name_ = std::exchange(other.temp_name_, {});
    }
    return *this;
}

IoStatus AtomicFile::open(int dir_fd, std::string_view name, mode_t mode) {
    discard();
    abandoned_temporaries().retry();
    dir_fd_.reset(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
    if (!dir_fd_) return IoStatus::failure("dup directory", errno);
    final_name_ = std::string(name);
    // A name taken by a concurrent writer (the daemon's indexer and `linecap index`) is
    // retried with another suffix; a handful of collisions in a row means something else.
    for (int attempt = 0; attempt < 16; ++attempt) {
        std::string temp(kHidden);
        temp.append(name).append(kTemporaryInfix).append(unique_suffix());
        fd_.reset(::openat(dir_fd_.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
        if (fd_) {
            temp_name_ = std::move(temp);
            return {};
        }
        if (errno != EEXIST) break;
    }
    const int error = errno;
    dir_fd_.reset();
    return IoStatus::failure("create temporary file", error);
}

IoStatus AtomicFile::open(const std::string& path, mode_t mode) {
    UniqueFd dir;
    std::string name;
    const IoStatus parent = open_parent(path, dir, name);
    return parent.ok() ? open(dir.get(), name, mode) : parent;
}

IoStatus AtomicFile::write(std::span<const uint8_t> bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd_.get(), bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return IoStatus::failure("write", n < 0 ? errno : EIO);
        bytes = bytes.subspan(static_cast<size_t>(n));
    }
    return {};
}

IoStatus AtomicFile::write_and_commit(std::span<const uint8_t> bytes) {
    const IoStatus written = write(bytes);
    return written.ok() ? commit() : written;
}

IoStatus AtomicFile::commit() {
    if (!fd_) return IoStatus::failure("commit", EBADF);
    if (::fsync(fd_.get()) != 0) return IoStatus::failure("fsync", errno);
    fd_.reset();
    // Absent: renamed without replacing, so nothing created there meanwhile (a device
    // node, a symlink) is replaced either; if something was, it is checked again.
    // Present: replaced only when it is a regular file.
    for (int attempt = 0;; ++attempt) {
        struct stat st {};
        const bool exists = ::fstatat(dir_fd_.get(), final_name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (exists && !S_ISREG(st.st_mode))
            return IoStatus::refused("the final name exists and is not a regular file; not replaced");
        int rc = exists ? ::renameat(dir_fd_.get(), temp_name_.c_str(), dir_fd_.get(), final_name_.c_str())
                        : ::renameat2(dir_fd_.get(), temp_name_.c_str(), dir_fd_.get(), final_name_.c_str(),
                                      RENAME_NOREPLACE);
        if (rc != 0 && !exists && errno == EINVAL)  // a file system without RENAME_NOREPLACE
            rc = ::renameat(dir_fd_.get(), temp_name_.c_str(), dir_fd_.get(), final_name_.c_str());
        if (rc == 0) break;
        if (errno != EEXIST || attempt > 0) return IoStatus::failure("rename", errno);
    }
    temp_name_.clear();
    const bool synced = ::fsync(dir_fd_.get()) == 0;
    const int error = errno;
    dir_fd_.reset();
    return synced ? IoStatus{} : IoStatus::failure("fsync directory", error);
}

void AtomicFile::discard() {
    fd_.reset();
    if (!temp_name_.empty() && dir_fd_ && ::unlinkat(dir_fd_.get(), temp_name_.c_str(), 0) != 0 && errno != ENOENT)
        abandoned_temporaries().add(dir_fd_.get(), temp_name_);
    temp_name_.clear();
    dir_fd_.reset();
}

IoStatus atomic_write(int dir_fd, std::string_view name, std::span<const uint8_t> bytes, mode_t mode) {
    AtomicFile file;
    const IoStatus opened = file.open(dir_fd, name, mode);
    return opened.ok() ? file.write_and_commit(bytes) : opened;
}

IoStatus atomic_write(const std::string& path, std::span<const uint8_t> bytes, mode_t mode) {
    AtomicFile file;
    const IoStatus opened = file.open(path, mode);
    return opened.ok() ? file.write_and_commit(bytes) : opened;
}

bool exists_at(int dir_fd, const std::string& name) {
    struct stat st {};
    return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

}  // namespace linecap::layout
