#include "output/recovery.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>

#include "output/file_naming.hpp"
#include "output/pcap_format.hpp"
#include "output/unique_fd.hpp"

namespace linecap {
namespace {

constexpr size_t kReadWindow = 1 << 20;
constexpr uint32_t kNanosecondsPerSecond = 1000000000u;
constexpr uint32_t kMicrosecondsPerSecond = 1000000u;

uint32_t load_u32(const uint8_t* p, bool swapped) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return swapped ? __builtin_bswap32(v) : v;
}

// Reads the file in large windows so a scan over millions of records costs a few preads,
// not one per record.
class WindowedReader {
public:
    WindowedReader(int fd, uint64_t file_size) : fd_(fd), file_size_(file_size), buffer_(kReadWindow) {}

    // `n` bytes at `offset` (n <= kReadWindow, offset + n <= file size), or null with
    // error() set.
    const uint8_t* at(uint64_t offset, size_t n) {
        if (offset < start_ || offset + n > start_ + length_) {
            if (!fill(offset)) return nullptr;
            if (offset + n > start_ + length_) {
                error_ = IoStatus::failure("read", EIO);  // file shrank under us
                return nullptr;
            }
        }
        return buffer_.data() + (offset - start_);
    }
    const IoStatus& error() const { return error_; }

private:
    bool fill(uint64_t offset) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(kReadWindow, file_size_ - offset));
        size_t got = 0;
        while (got < want) {
            const ssize_t n = ::pread(fd_, buffer_.data() + got, want - got, static_cast<off_t>(offset + got));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                error_ = IoStatus::failure("read", errno);
                return false;
            }
            if (n == 0) break;
            got += static_cast<size_t>(n);
        }
        start_ = offset;
        length_ = got;
        return true;
    }

    int fd_;
    uint64_t file_size_;
    std::vector<uint8_t> buffer_;
    uint64_t start_ = 0;
    size_t length_ = 0;
    IoStatus error_;
};

struct Format {
    bool swapped = false;
    uint32_t fraction_limit = 0;  // ts_frac must be below this
};

std::optional<Format> format_of(uint32_t magic) {
    if (magic == pcap::kMagicNanosecond) return Format{false, kNanosecondsPerSecond};
    if (magic == pcap::kMagicMicrosecond) return Format{false, kMicrosecondsPerSecond};
    if (magic == __builtin_bswap32(pcap::kMagicNanosecond)) return Format{true, kNanosecondsPerSecond};
    if (magic == __builtin_bswap32(pcap::kMagicMicrosecond)) return Format{true, kMicrosecondsPerSecond};
    return std::nullopt;
}

bool name_exists(int dir_fd, const std::string& name) {
    struct stat st {};
    return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

// `preferred` if free, else `alternative`, else `alternative` numbered -1, -2, …
std::string free_name(int dir_fd, const std::string& preferred, const std::string& alternative) {
    if (!name_exists(dir_fd, preferred)) return preferred;
    if (!name_exists(dir_fd, alternative)) return alternative;
    for (unsigned n = 1;; ++n) {
        std::string candidate = insert_before_extension(alternative, std::to_string(n));
        if (!name_exists(dir_fd, candidate)) return candidate;
    }
}

Result<std::vector<std::string>> in_progress_names(const std::string& directory) {
    DIR* dir = ::opendir(directory.c_str());
    if (dir == nullptr) return runtime_error("recovery: " + directory + ": " + errno_text(errno));
    std::vector<std::string> names;
    // Collected first and handled afterwards: renaming while readdir runs may show an
    // entry twice or not at all.
    while (const dirent* entry = ::readdir(dir))
        if (final_name_of_in_progress(entry->d_name)) names.emplace_back(entry->d_name);
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
}

class Recoverer {
public:
    Recoverer(std::string directory, int dir_fd) : directory_(std::move(directory)), dir_fd_(dir_fd) {}

    RecoveredFile recover(const std::string& part_name) {
        RecoveredFile file;
        file.in_progress_name = part_name;
        const std::string final_name = *final_name_of_in_progress(part_name);

        struct stat st {};
        if (::fstatat(dir_fd_, part_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            return failed(std::move(file), IoStatus::failure("stat", errno));
        if (!S_ISREG(st.st_mode)) {
            file.reason = "not a regular file";
            return failed(std::move(file), {});
        }
        UniqueFd fd(::openat(dir_fd_, part_name.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
        if (!fd) return failed(std::move(file), IoStatus::failure("open", errno));

        const PcapScan scan = scan_pcap(fd.get());
        if (!scan.io.ok()) return failed(std::move(file), scan.io);
        if (!scan.header_valid) {
            file.reason = scan.header_problem;
            return move_aside(std::move(file), final_name);
        }

        if (scan.valid_bytes < scan.file_bytes &&
            ::ftruncate(fd.get(), static_cast<off_t>(scan.valid_bytes)) != 0)
            return failed(std::move(file), IoStatus::failure("ftruncate", errno));
        if (::fsync(fd.get()) != 0) return failed(std::move(file), IoStatus::failure("fsync", errno));

        const std::string target = free_name(dir_fd_, final_name, insert_before_extension(final_name, "recovered"));
        if (IoStatus status = rename(part_name, target); !status.ok()) return failed(std::move(file), status);

        file.outcome = RecoveredFile::Outcome::recovered;
        file.new_name = target;
        file.packets = scan.packets;
        file.truncated_bytes = scan.file_bytes - scan.valid_bytes;
        spdlog::info("recovered {}: {} packets, {} bytes truncated (was {})", path_of(target), file.packets,
                     file.truncated_bytes, part_name);
        return file;
    }

private:
    RecoveredFile move_aside(RecoveredFile file, const std::string& final_name) {
        const std::string corrupt = final_name + ".corrupt";
        const std::string target = free_name(dir_fd_, corrupt, corrupt);
        if (IoStatus status = rename(file.in_progress_name, target); !status.ok())
            return failed(std::move(file), status);
        file.outcome = RecoveredFile::Outcome::moved_aside;
        file.new_name = target;
        spdlog::warn("recovery: {} is not a pcap file ({}); moved aside to {}",
                     path_of(file.in_progress_name), file.reason, target);
        return file;
    }

    RecoveredFile failed(RecoveredFile file, const IoStatus& status) {
        file.outcome = RecoveredFile::Outcome::failed;
        if (!status.ok()) file.reason = status.message();
        spdlog::error("recovery: {}: {}; left as it is", path_of(file.in_progress_name), file.reason);
        return file;
    }

    IoStatus rename(const std::string& from, const std::string& to) {
        if (::renameat(dir_fd_, from.c_str(), dir_fd_, to.c_str()) != 0) return IoStatus::failure("rename", errno);
        if (::fsync(dir_fd_) != 0) return IoStatus::failure("fsync directory", errno);
        return {};
    }

    std::string path_of(const std::string& name) const { return directory_ + "/" + name; }

    std::string directory_;
    int dir_fd_;
};

}  // namespace

PcapScan scan_pcap(int fd) {
    PcapScan scan;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        scan.io = IoStatus::failure("stat", errno);
        return scan;
    }
    scan.file_bytes = static_cast<uint64_t>(st.st_size);
    if (scan.file_bytes < sizeof(pcap::FileHeader)) {
        scan.header_problem = "shorter than a pcap file header (" + std::to_string(scan.file_bytes) + " bytes)";
        return scan;
    }

    WindowedReader reader(fd, scan.file_bytes);
    const uint8_t* header = reader.at(0, sizeof(pcap::FileHeader));
    if (header == nullptr) {
        scan.io = reader.error();
        return scan;
    }
    const std::optional<Format> format = format_of(load_u32(header, false));
    if (!format) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%08x", load_u32(header, false));
        scan.header_problem = std::string("unknown magic ") + hex;
        return scan;
    }
    scan.header_valid = true;
    const uint32_t snaplen = load_u32(header + offsetof(pcap::FileHeader, snaplen), format->swapped);
    const uint32_t max_caplen = snaplen == 0 ? pcap::kMaxSnaplen : std::min(snaplen, pcap::kMaxSnaplen);

    uint64_t offset = sizeof(pcap::FileHeader);
    while (offset + sizeof(pcap::RecordHeader) <= scan.file_bytes) {
        const uint8_t* record = reader.at(offset, sizeof(pcap::RecordHeader));
        if (record == nullptr) {
            scan.io = reader.error();
            return scan;
        }
        const uint32_t ts_frac = load_u32(record + offsetof(pcap::RecordHeader, ts_frac), format->swapped);
        const uint32_t caplen = load_u32(record + offsetof(pcap::RecordHeader, caplen), format->swapped);
        const uint32_t len = load_u32(record + offsetof(pcap::RecordHeader, len), format->swapped);
        const bool plausible = ts_frac < format->fraction_limit && caplen <= max_caplen && caplen <= len && len > 0;
        const uint64_t end = offset + pcap::record_size(caplen);
        if (!plausible || end > scan.file_bytes) break;
        offset = end;
        ++scan.packets;
    }
    scan.valid_bytes = offset;
    return scan;
}

size_t RecoveryReport::count(RecoveredFile::Outcome outcome) const {
    return static_cast<size_t>(
        std::count_if(files.begin(), files.end(), [&](const RecoveredFile& f) { return f.outcome == outcome; }));
}

Result<RecoveryReport> recover_in_progress(const std::string& directory) {
    UniqueFd dir_fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd) return runtime_error("recovery: " + directory + ": " + errno_text(errno));
    Result<std::vector<std::string>> names = in_progress_names(directory);
    if (!names) return names.error();

    RecoveryReport report;
    Recoverer recoverer(directory, dir_fd.get());
    for (const std::string& name : names.value()) report.files.push_back(recoverer.recover(name));
    return report;
}

}  // namespace linecap
