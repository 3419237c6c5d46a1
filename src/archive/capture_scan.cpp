#include "archive/capture_scan.hpp"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "format/zstd_seekable.hpp"
#include "archive/layout.hpp"
#include "util/sha256.hpp"
#include "util/stat_time.hpp"

namespace linecap {
namespace {

constexpr size_t kHashChunk = 4u << 20;

// A read-only mapping of the whole file (nothing for an empty file): the reader parses
// it in place and the hash reads it once.
class Mapping {
public:
    Mapping(int fd, uint64_t size) : size_(size) {
        if (size == 0) return;
        void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            error_ = errno;
            return;
        }
        data_ = static_cast<const uint8_t*>(p);
    }
    ~Mapping() {
        if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
    }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;

    void sequential() const {
        if (data_ != nullptr) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_SEQUENTIAL);
    }
    std::span<const uint8_t> bytes() const { return {data_, static_cast<size_t>(data_ ? size_ : 0)}; }
    int error() const { return error_; }

private:
    const uint8_t* data_ = nullptr;
    uint64_t size_;
    int error_ = 0;
};

}  // namespace

const char* format_name(const CaptureScan& scan) { return scan.format ? to_string(*scan.format) : "unknown"; }

CaptureScan scan_capture(int fd, ScanOptions options) {
    CaptureScan scan;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        scan.io = IoStatus::failure("stat", errno);
        return scan;
    }
    const Mapping map(fd, static_cast<uint64_t>(st.st_size));
    if (map.error() != 0) {
        scan.io = IoStatus::failure("mmap", map.error());
        return scan;
    }
    if (options.hash) map.sequential();
    return scan_capture(format::MemorySource(map.bytes()), options);
}

CaptureScan scan_capture(const format::ByteSource& source, ScanOptions options) {
    CaptureScan scan;
    scan.file_bytes = source.size();
    if (options.hash) {
        Sha256 hash;
        if (const uint8_t* memory = source.contiguous()) {
            for (uint64_t at = 0; at < scan.file_bytes; at += kHashChunk)
                hash.update({memory + at, static_cast<size_t>(std::min<uint64_t>(kHashChunk, scan.file_bytes - at))});
        } else {
            std::vector<uint8_t> chunk(kHashChunk);
            for (uint64_t at = 0; at < scan.file_bytes;) {
                const ssize_t n = source.read_at(chunk.data(), chunk.size(), at);
                if (n <= 0) {
                    scan.io = IoStatus::failure("read", n < 0 ? errno : EIO);
                    return scan;
                }
                hash.update({chunk.data(), static_cast<size_t>(n)});
                at += static_cast<uint64_t>(n);
            }
        }
        if (hash.ok()) {
            const Sha256::Digest d = hash.finish();
            if (hash.ok()) scan.sha256 = Sha256::hex(d);
        }
        if (scan.sha256.empty()) {
            scan.io = IoStatus::failure("sha256", EIO);
            return scan;
        }
    }

    uint8_t first[4];
    if (source.read_at(first, sizeof first, 0) == static_cast<ssize_t>(sizeof first)) {
        uint32_t magic;
        std::memcpy(&magic, first, sizeof magic);
        scan.format = format::kind_of_magic(magic);
    }
    auto header = format::read_header(source);
    if (!header) {
        scan.header_problem = header.error().message;
        return scan;
    }
    scan.header_valid = true;
    scan.snaplen = header->snaplen;
    format::CaptureReader reader(source, header.value());
    reader.set_strict(true);  // the daemon's own files: what it never writes is damage
    // pcapng: the first interface of the file describes it (the daemon writes one).
    bool described = header->kind != FileKind::pcapng;
    auto describe = [&] {
        if (described || reader.interfaces().empty()) return;
        const format::Interface& i = reader.interfaces().front();
        scan.snaplen = i.snaplen;
        scan.interface_name = i.name;
        scan.interface_description = i.description;
        described = true;
    };
    format::Record r;
    while (reader.next(r)) {
        if (scan.packets == 0) scan.first_ns = r.ts_ns;
        scan.last_ns = r.ts_ns;
        ++scan.packets;
        scan.wire_bytes += r.len;
        describe();
        if (options.first_packet_only) break;
    }
    describe();
    scan.valid_bytes = reader.position();
    if (reader.failed()) scan.record_problem = reader.error();
    scan.statistics = reader.statistics();
    return scan;
}

Result<std::unique_ptr<format::OpenFile>> open_stored_capture(const std::string& capture_path) {
    auto plain = format::FileSource::open(capture_path);
    if (plain) return std::unique_ptr<format::OpenFile>(std::move(plain.value()));
    const std::string compressed = layout::compressed_name(capture_path);
    struct stat st {};
    if (::stat(compressed.c_str(), &st) != 0) return plain.error();
    auto file = format::open_capture_file(compressed);
    if (!file) return file.error().context(compressed);
    return std::move(file.value());
}

std::optional<StoredStat> stat_stored_capture(const std::string& capture_path) {
    struct stat st {};
    if (::stat(capture_path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        return StoredStat{static_cast<uint64_t>(st.st_size), static_cast<uint64_t>(st.st_size), stat_mtime_ns(st),
                          stat_ctime_ns(st), false};
    const std::string compressed = layout::compressed_name(capture_path);
    if (::stat(compressed.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    auto file = format::open_capture_file(compressed);
    if (!file) return std::nullopt;
    return StoredStat{file.value()->size(), static_cast<uint64_t>(st.st_size), stat_mtime_ns(st), stat_ctime_ns(st),
                      true};
}

bool capture_stored(const std::string& capture_path) {
    struct stat st {};
    return ::stat(capture_path.c_str(), &st) == 0 || ::stat(layout::compressed_name(capture_path).c_str(), &st) == 0;
}

}  // namespace linecap
