#include "output/capture_scan.hpp"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>
#include <vector>

#include "output/pcap_format.hpp"
#include "output/pcapng_blocks.hpp"
#include "output/pcapng_format.hpp"
#include "output/sha256.hpp"

namespace linecap {
namespace {

constexpr uint32_t kNanosecondsPerSecond = 1000000000u;
constexpr uint32_t kMicrosecondsPerSecond = 1000000u;
constexpr size_t kHashChunk = 4u << 20;

// A read-only mapping of the whole file (nothing for an empty file).
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
    const uint8_t* data() const { return data_; }
    int error() const { return error_; }

private:
    const uint8_t* data_ = nullptr;
    uint64_t size_;
    int error_ = 0;
};

class Bytes {
public:
    Bytes(const uint8_t* data, uint64_t size, bool swapped) : data_(data), size_(size), swapped_(swapped) {}
    bool has(uint64_t offset, uint64_t n) const { return offset <= size_ && n <= size_ - offset; }
    uint16_t u16(uint64_t offset) const {
        uint16_t v;
        std::memcpy(&v, data_ + offset, sizeof v);
        return swapped_ ? __builtin_bswap16(v) : v;
    }
    uint32_t u32(uint64_t offset) const {
        uint32_t v;
        std::memcpy(&v, data_ + offset, sizeof v);
        return swapped_ ? __builtin_bswap32(v) : v;
    }
    uint64_t u64(uint64_t offset) const {
        uint64_t v;
        std::memcpy(&v, data_ + offset, sizeof v);
        return swapped_ ? __builtin_bswap64(v) : v;
    }
    const uint8_t* at(uint64_t offset) const { return data_ + offset; }

private:
    const uint8_t* data_;
    uint64_t size_;
    bool swapped_;
};

void saw_packet(CaptureScan& scan, uint64_t ts_ns) {
    if (scan.packets == 0) scan.first_ns = ts_ns;
    scan.last_ns = ts_ns;
    ++scan.packets;
}

std::string hex32(uint32_t v) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", v);
    return text;
}

// --- pcap -----------------------------------------------------------------------------

void scan_pcap(const uint8_t* data, CaptureScan& scan, bool swapped, bool nanoseconds, bool first_only) {
    const Bytes b(data, scan.file_bytes, swapped);
    const uint32_t fraction_limit = nanoseconds ? kNanosecondsPerSecond : kMicrosecondsPerSecond;
    const uint32_t snaplen = b.u32(offsetof(pcap::FileHeader, snaplen));
    scan.snaplen = snaplen;
    const uint32_t max_caplen = snaplen == 0 ? pcap::kMaxSnaplen : std::min(snaplen, pcap::kMaxSnaplen);

    uint64_t offset = sizeof(pcap::FileHeader);
    while (b.has(offset, sizeof(pcap::RecordHeader))) {
        const uint32_t ts_sec = b.u32(offset + offsetof(pcap::RecordHeader, ts_sec));
        const uint32_t ts_frac = b.u32(offset + offsetof(pcap::RecordHeader, ts_frac));
        const uint32_t caplen = b.u32(offset + offsetof(pcap::RecordHeader, caplen));
        const uint32_t len = b.u32(offset + offsetof(pcap::RecordHeader, len));
        const bool plausible = ts_frac < fraction_limit && caplen <= max_caplen && caplen <= len && len > 0;
        if (!plausible || !b.has(offset, pcap::record_size(caplen))) break;
        offset += pcap::record_size(caplen);
        saw_packet(scan, uint64_t{ts_sec} * kNanosecondsPerSecond +
                             (nanoseconds ? ts_frac : uint64_t{ts_frac} * 1000u));
        if (first_only) break;
    }
    scan.valid_bytes = offset;
}

// --- pcapng ---------------------------------------------------------------------------

struct Interface {
    uint32_t snaplen = 0;
    uint8_t tsresol = 6;  // pcapng default: microseconds
};

// Timestamp units of an interface → ns (if_tsresol: bit 7 clear = 10^-n, set = 2^-n).
uint64_t units_to_ns(uint64_t units, uint8_t tsresol) {
    const unsigned n = tsresol & 0x7f;
    if ((tsresol & 0x80) == 0) {
        if (n == 9) return units;
        if (n < 9) {
            uint64_t scale = 1;
            for (unsigned i = n; i < 9; ++i) scale *= 10;
            return units * scale;
        }
        uint64_t scale = 1;
        for (unsigned i = 9; i < n && i < 28; ++i) scale *= 10;
        return units / scale;
    }
    if (n >= 64) return 0;
    return static_cast<uint64_t>((static_cast<unsigned __int128>(units) * kNanosecondsPerSecond) >> n);
}

uint64_t timestamp_at(const Bytes& b, uint64_t offset) {
    return (uint64_t{b.u32(offset)} << 32) | b.u32(offset + 4);
}

// Calls fn(code, value offset, length) for each option in [offset, end).
template <typename Fn>
void for_each_option(const Bytes& b, uint64_t offset, uint64_t end, Fn&& fn) {
    while (offset + 4 <= end) {
        const uint16_t code = b.u16(offset);
        const uint16_t length = b.u16(offset + 2);
        if (code == pcapng::kOptEndOfOpt) return;
        const uint64_t value = offset + 4;
        if (value + length > end) return;
        fn(code, value, length);
        offset = value + pcapng::padded(length);
    }
}

void scan_pcapng(const uint8_t* data, CaptureScan& scan, bool swapped, bool first_only) {
    const Bytes b(data, scan.file_bytes, swapped);
    std::vector<Interface> interfaces;
    uint64_t offset = 0;
    while (b.has(offset, 12)) {
        const uint32_t type = b.u32(offset);
        const uint32_t length = b.u32(offset + 4);
        if (length < 12 || length % 4 != 0 || !b.has(offset, length) || b.u32(offset + length - 4) != length) break;
        const uint64_t body = offset + 8;
        const uint64_t end = offset + length - 4;  // where the options (if any) end

        if (type == pcapng::kSectionHeaderBlock) {
            // A new section: same byte order required here (one file = one writer).
            if (length < 28 || b.u32(body) != pcapng::kByteOrderMagic) break;
            interfaces.clear();
        } else if (type == pcapng::kInterfaceDescriptionBlock) {
            if (length < 20) break;
            Interface i;
            i.snaplen = b.u32(body + 4);
            std::string name, description;
            for_each_option(b, body + 8, end, [&](uint16_t code, uint64_t value, uint16_t n) {
                if (code == pcapng::kIfTsresol && n >= 1) i.tsresol = *b.at(value);
                if (code == pcapng::kIfName) name.assign(reinterpret_cast<const char*>(b.at(value)), n);
                if (code == pcapng::kIfDescription) description.assign(reinterpret_cast<const char*>(b.at(value)), n);
            });
            if (interfaces.empty() && scan.interface_name.empty() && scan.snaplen == 0) {
                scan.snaplen = i.snaplen;
                scan.interface_name = name;
                scan.interface_description = description;
            }
            interfaces.push_back(i);
        } else if (type == pcapng::kEnhancedPacketBlock) {
            if (length < 32) break;
            const uint32_t interface = b.u32(body);
            const uint32_t caplen = b.u32(body + 12);
            const uint32_t len = b.u32(body + 16);
            if (interface >= interfaces.size()) break;
            const Interface& i = interfaces[interface];
            const bool plausible = caplen <= len && len > 0 && 32 + uint64_t{pcapng::padded(caplen)} <= length &&
                                   (i.snaplen == 0 || caplen <= i.snaplen) && caplen <= pcap::kMaxSnaplen;
            if (!plausible) break;
            saw_packet(scan, units_to_ns(timestamp_at(b, body + 4), i.tsresol));
        } else if (type == 3 /* Simple Packet Block */) {
            if (interfaces.empty()) break;
            ++scan.packets;
        } else if (type == pcapng::kInterfaceStatisticsBlock) {
            if (length < 24) break;
            const uint32_t interface = b.u32(body);
            const uint8_t tsresol = interface < interfaces.size() ? interfaces[interface].tsresol : 9;
            CaptureStatistics s;
            for_each_option(b, body + 12, end, [&](uint16_t code, uint64_t value, uint16_t n) {
                if ((code == pcapng::kIsbStartTime || code == pcapng::kIsbEndTime) && n == 8) {
                    const uint64_t ns = units_to_ns(timestamp_at(b, value), tsresol);
                    (code == pcapng::kIsbStartTime ? s.start_ns : s.end_ns) = ns;
                }
                if (code == pcapng::kIsbIfRecv && n == 8) s.ifrecv = b.u64(value);
                if (code == pcapng::kIsbIfDrop && n == 8) s.ifdrop = b.u64(value);
                if (code == pcapng::kIsbFilterAccept && n == 8) s.filteraccept = b.u64(value);
                if (code == pcapng::kOptComment) s.comment.assign(reinterpret_cast<const char*>(b.at(value)), n);
            });
            scan.statistics = std::move(s);
        }
        offset += length;
        if (first_only && scan.packets > 0) break;
    }
    scan.valid_bytes = offset;
}

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
    const uint8_t* data = map.data();

    if (options.hash) {
        map.sequential();
        Sha256 hash;
        for (uint64_t at = 0; at < scan.file_bytes; at += kHashChunk)
            hash.update({data + at, static_cast<size_t>(std::min<uint64_t>(kHashChunk, scan.file_bytes - at))});
        if (hash.ok()) {
            const Sha256::Digest d = hash.finish();
            if (hash.ok()) scan.sha256 = Sha256::hex(d);
        }
        if (scan.sha256.empty()) {
            scan.io = IoStatus::failure("sha256", EIO);
            return scan;
        }
    }

    if (scan.file_bytes < 4) {
        scan.header_problem = "shorter than a capture file header (" + std::to_string(scan.file_bytes) + " bytes)";
        return scan;
    }
    uint32_t magic;
    std::memcpy(&magic, data, sizeof magic);

    if (magic == pcapng::kSectionHeaderBlock) {
        scan.format = CaptureFormat::pcapng;
        if (scan.file_bytes < 28) {
            scan.header_problem = "shorter than a pcapng section header (" + std::to_string(scan.file_bytes) + " bytes)";
            return scan;
        }
        uint32_t bom;
        std::memcpy(&bom, data + 8, sizeof bom);
        if (bom != pcapng::kByteOrderMagic && bom != __builtin_bswap32(pcapng::kByteOrderMagic)) {
            scan.header_problem = "pcapng byte-order magic " + hex32(bom);
            return scan;
        }
        const bool swapped = bom != pcapng::kByteOrderMagic;
        const Bytes b(data, scan.file_bytes, swapped);
        const uint32_t length = b.u32(4);
        if (length < 28 || length % 4 != 0 || !b.has(0, length) || b.u32(length - 4) != length) {
            scan.header_problem = "incomplete pcapng section header block";
            return scan;
        }
        scan.header_valid = true;
        scan_pcapng(data, scan, swapped, options.first_packet_only);
        return scan;
    }

    struct PcapMagic {
        uint32_t magic;
        bool swapped;
        bool nanoseconds;
    };
    static constexpr PcapMagic kMagics[] = {
        {pcap::kMagicNanosecond, false, true},
        {pcap::kMagicMicrosecond, false, false},
        {__builtin_bswap32(pcap::kMagicNanosecond), true, true},
        {__builtin_bswap32(pcap::kMagicMicrosecond), true, false},
    };
    for (const PcapMagic& m : kMagics) {
        if (magic != m.magic) continue;
        scan.format = CaptureFormat::pcap;
        if (scan.file_bytes < sizeof(pcap::FileHeader)) {
            scan.header_problem = "shorter than a pcap file header (" + std::to_string(scan.file_bytes) + " bytes)";
            return scan;
        }
        scan.header_valid = true;
        scan_pcap(data, scan, m.swapped, m.nanoseconds, options.first_packet_only);
        return scan;
    }
    scan.header_problem = "unknown magic " + hex32(magic);
    return scan;
}

}  // namespace linecap
