#include "output/capture_scan.hpp"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <span>

#include "output/sha256.hpp"

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

const char* to_string(CaptureFormat format) {
    switch (format) {
        case CaptureFormat::pcap: return "pcap";
        case CaptureFormat::pcapng: return "pcapng";
        case CaptureFormat::unknown: break;
    }
    return "unknown";
}

CaptureScan scan_capture(int fd, ScanOptions options) {
    CaptureScan scan;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        scan.io = IoStatus::failure("stat", errno);
        return scan;
    }
    scan.file_bytes = static_cast<uint64_t>(st.st_size);
    const Mapping map(fd, scan.file_bytes);
    if (map.error() != 0) {
        scan.io = IoStatus::failure("mmap", map.error());
        return scan;
    }
    const std::span<const uint8_t> bytes = map.bytes();

    if (options.hash) {
        map.sequential();
        Sha256 hash;
        for (size_t at = 0; at < bytes.size(); at += kHashChunk)
            hash.update(bytes.subspan(at, std::min(kHashChunk, bytes.size() - at)));
        if (hash.ok()) {
            const Sha256::Digest d = hash.finish();
            if (hash.ok()) scan.sha256 = Sha256::hex(d);
        }
        if (scan.sha256.empty()) {
            scan.io = IoStatus::failure("sha256", EIO);
            return scan;
        }
    }

    if (bytes.size() >= 4) {
        uint32_t magic;
        std::memcpy(&magic, bytes.data(), sizeof magic);
        if (auto kind = format::kind_of_magic(magic))
            scan.format = *kind == format::FileKind::pcapng ? CaptureFormat::pcapng : CaptureFormat::pcap;
    }
    const format::MemorySource source(bytes);
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
    bool described = header->kind != format::FileKind::pcapng;
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
        describe();
        if (options.first_packet_only) break;
    }
    describe();
    scan.valid_bytes = reader.position();
    if (reader.failed()) scan.record_problem = reader.error();
    scan.statistics = reader.statistics();
    return scan;
}

}  // namespace linecap
