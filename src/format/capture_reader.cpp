#include "format/capture_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "format/pcapng_blocks.hpp"
#include "format/pcapng_format.hpp"
#include "util/errno_text.hpp"

namespace linecap::format {
namespace {

constexpr uint64_t kNs = 1000000000u;
// Bounds that keep a hostile file from making the reader hold much: interfaces per
// section (each costs a few dozen bytes) and the bytes of a name or description kept.
constexpr size_t kMaxInterfaces = 1u << 16;
constexpr size_t kMaxText = 256;

uint16_t load_u16(const uint8_t* p, bool swapped) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return swapped ? __builtin_bswap16(v) : v;
}
uint32_t load_u32(const uint8_t* p, bool swapped) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return swapped ? __builtin_bswap32(v) : v;
}
uint64_t load_u64(const uint8_t* p, bool swapped) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return swapped ? __builtin_bswap64(v) : v;
}
// A pcapng timestamp: upper 32 bits, then lower 32 bits, each in the section's order.
uint64_t load_timestamp(const uint8_t* p, bool swapped) {
    return (uint64_t{load_u32(p, swapped)} << 32) | load_u32(p + 4, swapped);
}

std::string hex32(uint32_t v) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", v);
    return text;
}

std::string at(uint64_t offset) { return " at offset " + std::to_string(offset); }

// Calls fn(code, value, length) for each option in [p, end), up to opt_endofopt or the
// first option that does not fit (libpcap stops there too).
template <typename Fn>
void for_each_option(const uint8_t* p, const uint8_t* end, bool swapped, Fn&& fn) {
    while (end - p >= 4) {
        const uint16_t code = load_u16(p, swapped);
        const uint16_t length = load_u16(p + 2, swapped);
        if (code == pcapng::kOptEndOfOpt) return;
        if (static_cast<size_t>(end - p - 4) < length) return;
        fn(code, p + 4, length);
        const size_t step = 4 + size_t{pcapng::padded(length)};
        if (static_cast<size_t>(end - p) < step) return;
        p += step;
    }
}

std::string bounded_text(const uint8_t* p, uint16_t n) {
    return std::string(reinterpret_cast<const char*>(p), std::min<size_t>(n, kMaxText));
}

// Checks a section header block whose first `avail` bytes are at `p`: byte-order magic
// (sets `swapped`), version and the block length (sets `length`; its trailer is checked
// with the other blocks). Empty = fine; else why not.
std::string check_section_header(const uint8_t* p, size_t avail, bool* swapped, uint32_t* length) {
    if (avail < 12) return "incomplete pcapng section header block";
    uint32_t bom;
    std::memcpy(&bom, p + 8, sizeof bom);
    if (bom == pcapng::kByteOrderMagic) *swapped = false;
    else if (bom == __builtin_bswap32(pcapng::kByteOrderMagic)) *swapped = true;
    else return "pcapng byte-order magic " + hex32(bom);
    *length = load_u32(p + 4, *swapped);
    if (*length < 28 || *length % 4 != 0 || *length > kMaxBlockBytes)
        return "pcapng section header block length " + std::to_string(*length) + " is impossible";
    if (avail >= 14 && load_u16(p + 12, *swapped) != 1)
        return "unsupported pcapng version " + std::to_string(load_u16(p + 12, *swapped)) + "." +
               std::to_string(avail >= 16 ? load_u16(p + 14, *swapped) : 0);
    return {};
}

// ns + s seconds, saturating at 0 and UINT64_MAX.
uint64_t add_seconds(uint64_t ns, int64_t s) {
    if (s == 0) return ns;
    const unsigned __int128 delta = static_cast<unsigned __int128>(s < 0 ? -static_cast<__int128>(s) : s) * kNs;
    if (s < 0) return delta >= ns ? 0 : ns - static_cast<uint64_t>(delta);
    const unsigned __int128 sum = ns + delta;
    return sum > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(sum);
}

}  // namespace

std::optional<FileKind> kind_of_magic(uint32_t magic) {
    switch (magic) {
        case pcapng::kSectionHeaderBlock: return FileKind::pcapng;
        case pcap::kMagicNanosecond:
        case pcap::kMagicMicrosecond:
        case __builtin_bswap32(pcap::kMagicNanosecond):
        case __builtin_bswap32(pcap::kMagicMicrosecond): return FileKind::pcap;
        default: return std::nullopt;
    }
}

uint64_t units_to_ns(uint64_t units, uint8_t tsresol) {
    const unsigned n = tsresol & 0x7f;
    if ((tsresol & 0x80) == 0) {
        if (n == 9) return units;
        if (n < 9) {
            uint64_t scale = 1;
            for (unsigned i = n; i < 9; ++i) scale *= 10;
            const unsigned __int128 v = static_cast<unsigned __int128>(units) * scale;
            return v > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(v);
        }
        if (n >= 29) return 0;  // 10^20 units per ns: any 64-bit count is below 1 ns
        uint64_t scale = 1;
        for (unsigned i = 9; i < n; ++i) scale *= 10;
        return units / scale;
    }
    if (n >= 64) return 0;
    const unsigned __int128 v = (static_cast<unsigned __int128>(units) * kNs) >> n;
    return v > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(v);
}

// --- sources ---------------------------------------------------------------------------------

ssize_t MemorySource::read_at(void* dst, size_t n, uint64_t offset) const {
    if (offset >= bytes_.size()) return 0;
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n, bytes_.size() - offset));
    std::memcpy(dst, bytes_.data() + offset, k);
    return static_cast<ssize_t>(k);
}

Result<std::unique_ptr<FileSource>> FileSource::open(const std::string& path) {
    std::unique_ptr<FileSource> file(new FileSource());
    file->path_ = path;
    file->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (file->fd_ < 0) return runtime_error("open: " + errno_text(errno));
    struct stat st {};
    if (::fstat(file->fd_, &st) != 0) return runtime_error("fstat: " + errno_text(errno));
    if (!S_ISREG(st.st_mode)) return runtime_error("not a regular file");
    file->size_ = static_cast<uint64_t>(st.st_size);
    file->mtime_ns_ = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    return file;
}

FileSource::~FileSource() {
    if (fd_ >= 0) ::close(fd_);
}

ssize_t FileSource::read_at(void* dst, size_t n, uint64_t offset) const {
    size_t got = 0;
    auto* out = static_cast<uint8_t*>(dst);
    while (got < n) {
        const ssize_t r = ::pread(fd_, out + got, n - got, static_cast<off_t>(offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += static_cast<size_t>(r);
    }
    return static_cast<ssize_t>(got);
}

void FileSource::advise_sequential() const { (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL); }
void FileSource::advise_random() const { (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_RANDOM); }
void FileSource::will_need(uint64_t offset, uint64_t length) const {
    (void)::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(length), POSIX_FADV_WILLNEED);
}

// --- header ----------------------------------------------------------------------------------

Result<CaptureHeader> parse_header(std::span<const uint8_t> bytes) {
    if (bytes.empty()) return runtime_error("empty file");
    if (bytes.size() < 4)
        return runtime_error("shorter than a capture file header (" + std::to_string(bytes.size()) + " bytes)");
    CaptureHeader h;
    const uint32_t magic = load_u32(bytes.data(), false);
    if (magic == pcapng::kSectionHeaderBlock) {
        h.kind = FileKind::pcapng;
        uint32_t length = 0;
        if (auto problem = check_section_header(bytes.data(), bytes.size(), &h.swapped, &length); !problem.empty())
            return runtime_error(problem);
        h.version_major = 1;
        h.version_minor = bytes.size() >= 16 ? load_u16(bytes.data() + 14, h.swapped) : 0;
        h.snaplen = 0;
        h.data_begin = length;  // the reader checks the rest of the block when it gets there
        return h;
    }
    switch (magic) {
        case pcap::kMagicNanosecond: h.nanosecond = true; h.swapped = false; break;
        case pcap::kMagicMicrosecond: h.nanosecond = false; h.swapped = false; break;
        case __builtin_bswap32(pcap::kMagicNanosecond): h.nanosecond = true; h.swapped = true; break;
        case __builtin_bswap32(pcap::kMagicMicrosecond): h.nanosecond = false; h.swapped = true; break;
        default: return runtime_error("not a pcap or pcapng file (magic " + hex32(magic) + ")");
    }
    if (bytes.size() < sizeof(pcap::FileHeader))
        return runtime_error("shorter than a pcap file header (" + std::to_string(bytes.size()) + " of " +
                             std::to_string(sizeof(pcap::FileHeader)) + " bytes)");
    h.version_major = load_u16(bytes.data() + offsetof(pcap::FileHeader, version_major), h.swapped);
    h.version_minor = load_u16(bytes.data() + offsetof(pcap::FileHeader, version_minor), h.swapped);
    h.snaplen = load_u32(bytes.data() + offsetof(pcap::FileHeader, snaplen), h.swapped);
    h.link_field = load_u32(bytes.data() + offsetof(pcap::FileHeader, linktype), h.swapped);
    if (h.version_major != 2)
        return runtime_error("unsupported pcap version " + std::to_string(h.version_major) + "." +
                             std::to_string(h.version_minor));
    h.data_begin = sizeof(pcap::FileHeader);
    return h;
}

Result<CaptureHeader> read_header(const ByteSource& source) {
    uint8_t bytes[kHeaderProbeBytes];
    const ssize_t n = source.read_at(bytes, sizeof bytes, 0);
    if (n < 0) return runtime_error("read: " + errno_text(errno));
    auto h = parse_header({bytes, static_cast<size_t>(n)});
    if (h && h->kind == FileKind::pcapng && h->data_begin > source.size())
        return runtime_error("incomplete pcapng section header block (" + std::to_string(source.size()) + " of " +
                             std::to_string(h->data_begin) + " bytes)");
    return h;
}

// --- reader ----------------------------------------------------------------------------------

CaptureReader::CaptureReader(const ByteSource& source, const CaptureHeader& header, size_t buffer_size)
    : CaptureReader(source, header, header.data_begin, source.size(), buffer_size) {}

CaptureReader::CaptureReader(const ByteSource& source, const CaptureHeader& header, uint64_t begin, uint64_t end,
                             size_t buffer_size)
    : source_(source), header_(header), pos_(begin), end_(std::min(end, source.size())),
      end_is_eof_(end >= source.size()), memory_(source.contiguous()),
      buffer_size_(std::clamp<size_t>(buffer_size, 64, kMaxBlockBytes)), swapped_(header.swapped), sections_(1) {
    if (header_.kind == FileKind::pcap) {
        Interface i;
        i.link_field = header_.link_field;
        i.snaplen = header_.snaplen;
        i.tsresol = header_.nanosecond ? 9 : 6;
        interfaces_.push_back(i);
        prefix_read_ = true;
    }
    if (begin > header_.data_begin) seek(begin, end);
}

void CaptureReader::seek(uint64_t begin, uint64_t end) {
    problem_ = Problem::none;
    error_.clear();
    if (!prefix_read_ && begin > header_.data_begin) {
        if (!read_prefix()) return;
    }
    pos_ = begin;
    end_ = std::min(end, source_.size());
    end_is_eof_ = end >= source_.size();
    // The buffered bytes stay valid (same source); every parse is bounded by end_.
}

bool CaptureReader::fail(Problem problem, std::string message) {
    problem_ = problem;
    error_ = std::move(message);
    return false;
}

const uint8_t* CaptureReader::view(size_t n, bool* short_range) {
    *short_range = false;
    if (n > end_ - pos_) {
        *short_range = true;
        return nullptr;
    }
    if (memory_ != nullptr) return memory_ + pos_;
    if (buf_len_ > 0 && pos_ >= buf_offset_ && pos_ + n <= buf_offset_ + buf_len_)
        return buffer_.get() + (pos_ - buf_offset_);
    if (!buffer_ || n > buffer_size_) {
        buffer_size_ = std::max(buffer_size_, n);
        buffer_.reset(new uint8_t[buffer_size_]);
        buf_len_ = 0;
    }
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer_size_, end_ - pos_));
    const ssize_t got = source_.read_at(buffer_.get(), want, pos_);
    if (got < 0) {
        fail(Problem::io, "read" + at(pos_) + ": " + errno_text(errno));
        buf_len_ = 0;
        return nullptr;
    }
    buf_offset_ = pos_;
    buf_len_ = static_cast<size_t>(got);
    if (buf_len_ < want) {
        // The file shrank since it was opened: what remains is the end of the file.
        end_ = pos_ + buf_len_;
        end_is_eof_ = true;
    }
    if (n > buf_len_) {
        *short_range = true;
        return nullptr;
    }
    return buffer_.get();
}

bool CaptureReader::next(Record& record) {
    if (failed()) return false;
    return header_.kind == FileKind::pcap ? next_pcap(record) : next_pcapng(record);
}

bool CaptureReader::next_pcap(Record& record) {
    if (pos_ >= end_) return false;
    constexpr size_t kHeader = sizeof(pcap::RecordHeader);
    bool cut = false;
    const uint8_t* p = view(kHeader, &cut);
    if (p != nullptr) {
        const bool sw = header_.swapped;
        const uint32_t caplen = load_u32(p + offsetof(pcap::RecordHeader, caplen), sw);
        static constexpr uint8_t kZeros[kHeader] = {};
        if (std::memcmp(p, kZeros, kHeader) == 0)
            return fail(Problem::corrupt, "zero-filled record header" + at(pos_) +
                                              " (a file system's tail after a crash, not a packet)");
        if (caplen > pcap::kMaxSnaplen)
            return fail(Problem::corrupt, "corrupt record" + at(pos_) + ": caplen " + std::to_string(caplen) +
                                              " > the maximum " + std::to_string(pcap::kMaxSnaplen));
        if (strict_) {
            const uint32_t len = load_u32(p + offsetof(pcap::RecordHeader, len), sw);
            const uint32_t frac = load_u32(p + offsetof(pcap::RecordHeader, ts_frac), sw);
            std::string problem = strict_problem(caplen, len, header_.snaplen);
            if (problem.empty() && frac >= (header_.nanosecond ? kNs : 1000000u))
                problem = "timestamp fraction " + std::to_string(frac) + " out of range";
            if (!problem.empty()) return fail(Problem::corrupt, "corrupt record" + at(pos_) + ": " + problem);
        }
        p = view(kHeader + caplen, &cut);
        if (p != nullptr) {
            const uint32_t sec = load_u32(p + offsetof(pcap::RecordHeader, ts_sec), sw);
            const uint32_t frac = load_u32(p + offsetof(pcap::RecordHeader, ts_frac), sw);
            record.offset = pos_;
            record.end = pos_ + kHeader + caplen;
            record.ts_ns = uint64_t{sec} * kNs + (header_.nanosecond ? frac : uint64_t{frac} * 1000u);
            record.caplen = std::min(caplen, effective_snaplen(header_.snaplen));
            record.len = load_u32(p + offsetof(pcap::RecordHeader, len), sw);
            record.interface = 0;
            record.data = p + kHeader;
            pos_ = record.end;
            bytes_parsed_ += kHeader + caplen;
            return true;
        }
    }
    if (failed()) return false;
    if (end_is_eof_)
        return fail(Problem::truncated, "truncated record" + at(pos_) + " (" + std::to_string(end_ - pos_) +
                                            " bytes left at the end of the file)");
    return fail(Problem::range_mismatch, "record" + at(pos_) + " crosses the end of its range");
}

std::string CaptureReader::strict_problem(uint32_t caplen, uint32_t len, uint32_t snaplen) const {
    if (caplen > effective_snaplen(snaplen))
        return "caplen " + std::to_string(caplen) + " > snaplen " + std::to_string(effective_snaplen(snaplen));
    if (len == 0) return "original length 0";
    if (caplen > len) return "caplen " + std::to_string(caplen) + " > original length " + std::to_string(len);
    return {};
}

void CaptureReader::section_header(const uint8_t*, uint32_t) {
    interfaces_.clear();
    ++sections_;
    if (seen_packet_) layout_after_data_ = true;
}

bool CaptureReader::interface_block(const uint8_t* b, uint32_t length) {
    if (interfaces_.size() >= kMaxInterfaces)
        return fail(Problem::corrupt, "interface description block" + at(pos_) + ": more than " +
                                          std::to_string(kMaxInterfaces) + " interfaces in one section");
    Interface i;
    i.link_field = load_u16(b + 8, swapped_);
    i.snaplen = load_u32(b + 12, swapped_);
    i.tsresol = 6;  // pcapng's default: microseconds
    for_each_option(b + 16, b + length - 4, swapped_, [&](uint16_t code, const uint8_t* v, uint16_t n) {
        if (code == pcapng::kIfTsresol && n >= 1) i.tsresol = *v;
        if (code == pcapng::kIfTsoffset && n == 8) i.tsoffset_s = static_cast<int64_t>(load_u64(v, swapped_));
        if (code == pcapng::kIfName) i.name = bounded_text(v, n);
        if (code == pcapng::kIfDescription) i.description = bounded_text(v, n);
    });
    interfaces_.push_back(std::move(i));
    if (seen_packet_) layout_after_data_ = true;
    return true;
}

void CaptureReader::statistics_block(const uint8_t* b, uint32_t length) {
    Statistics s;
    s.interface = load_u32(b + 8, swapped_);
    const uint8_t tsresol = s.interface < interfaces_.size() ? interfaces_[s.interface].tsresol : 6;
    for_each_option(b + 20, b + length - 4, swapped_, [&](uint16_t code, const uint8_t* v, uint16_t n) {
        if ((code == pcapng::kIsbStartTime || code == pcapng::kIsbEndTime) && n == 8)
            (code == pcapng::kIsbStartTime ? s.start_ns : s.end_ns) = units_to_ns(load_timestamp(v, swapped_), tsresol);
        if (code == pcapng::kIsbIfRecv && n == 8) s.ifrecv = load_u64(v, swapped_);
        if (code == pcapng::kIsbIfDrop && n == 8) s.ifdrop = load_u64(v, swapped_);
        if (code == pcapng::kIsbFilterAccept && n == 8) s.filteraccept = load_u64(v, swapped_);
        if (code == pcapng::kOptComment) s.comment = bounded_text(v, n);
    });
    statistics_ = std::move(s);
}

// A block's type, in the current section's byte order (an SHB's reads the same in both).
uint32_t CaptureReader::block_type(const uint8_t* p) const {
    const uint32_t raw = load_u32(p, false);
    return raw == pcapng::kSectionHeaderBlock ? raw : load_u32(p, swapped_);
}

bool CaptureReader::next_pcapng(Record& record) {
    while (pos_ < end_) {
        bool cut = false;
        const uint8_t* p = view(12, &cut);
        if (p == nullptr) break;
        const uint32_t type = block_type(p);
        bool swapped = swapped_;
        uint32_t length = 0;
        if (type == pcapng::kSectionHeaderBlock) {
            if (auto problem = check_section_header(p, 12, &swapped, &length); !problem.empty())
                return fail(Problem::corrupt, problem + at(pos_));
        } else {
            length = load_u32(p + 4, swapped);
            if (length < 12 || length % 4 != 0 || length > kMaxBlockBytes)
                return fail(Problem::corrupt, "corrupt block" + at(pos_) + ": length " + std::to_string(length) +
                                                  " (a pcapng block is 12 bytes to " + std::to_string(kMaxBlockBytes >> 20) +
                                                  " MiB, a multiple of 4)");
        }
        const uint8_t* b = view(length, &cut);
        if (b == nullptr) break;
        if (load_u32(b + length - 4, swapped) != length)
            return fail(Problem::corrupt, "corrupt block" + at(pos_) + ": its trailing length " +
                                              std::to_string(load_u32(b + length - 4, swapped)) +
                                              " differs from its length " + std::to_string(length));
        auto impossible = [&](const char* what, uint32_t minimum) {
            return fail(Problem::corrupt, std::string("corrupt ") + what + at(pos_) + ": length " +
                                              std::to_string(length) + " < " + std::to_string(minimum));
        };
        const uint64_t offset = pos_;
        bool packet = false;
        switch (type) {
            case pcapng::kSectionHeaderBlock:
                if (load_u16(b + 12, swapped) != 1)
                    return fail(Problem::corrupt, "unsupported pcapng version " +
                                                      std::to_string(load_u16(b + 12, swapped)) + at(pos_));
                swapped_ = swapped;
                section_header(b, length);
                break;
            case pcapng::kInterfaceDescriptionBlock:
                if (length < 20) return impossible("interface description block", 20);
                if (!interface_block(b, length)) return false;
                break;
            case pcapng::kEnhancedPacketBlock:
            case pcapng::kPacketBlock: {
                if (length < 32) return impossible("packet block", 32);
                const uint32_t id = type == pcapng::kPacketBlock ? load_u16(b + 8, swapped_) : load_u32(b + 8, swapped_);
                const uint32_t caplen = load_u32(b + 20, swapped_);
                if (id >= interfaces_.size())
                    return fail(Problem::corrupt, "corrupt packet block" + at(pos_) + ": interface " +
                                                      std::to_string(id) + " is not described (" +
                                                      std::to_string(interfaces_.size()) + " in this section)");
                if (caplen > length - 32)
                    return fail(Problem::corrupt, "corrupt packet block" + at(pos_) + ": captured length " +
                                                      std::to_string(caplen) + " does not fit in its " +
                                                      std::to_string(length) + " bytes");
                const Interface& i = interfaces_[id];
                if (strict_) {
                    if (auto problem = strict_problem(caplen, load_u32(b + 24, swapped_), i.snaplen); !problem.empty())
                        return fail(Problem::corrupt, "corrupt packet block" + at(pos_) + ": " + problem);
                }
                record.ts_ns = add_seconds(units_to_ns(load_timestamp(b + 12, swapped_), i.tsresol), i.tsoffset_s);
                record.caplen = std::min(caplen, effective_snaplen(i.snaplen));
                record.len = load_u32(b + 24, swapped_);
                record.interface = id;
                record.data = b + 28;
                packet = true;
                break;
            }
            case pcapng::kSimplePacketBlock: {
                if (length < 16) return impossible("simple packet block", 16);
                if (interfaces_.empty())
                    return fail(Problem::corrupt, "corrupt simple packet block" + at(pos_) +
                                                      ": no interface described before it");
                const uint32_t len = load_u32(b + 8, swapped_);
                record.ts_ns = 0;  // an SPB has no timestamp (libpcap reports 0 too)
                record.caplen = std::min({len, length - 16, effective_snaplen(interfaces_[0].snaplen)});
                record.len = len;
                record.interface = 0;
                record.data = b + 12;
                packet = true;
                break;
            }
            case pcapng::kInterfaceStatisticsBlock:
                if (length < 24) return impossible("interface statistics block", 24);
                statistics_block(b, length);
                break;
            default:
                break;  // a block this reader does not need (name resolution, custom, …)
        }
        pos_ += length;
        bytes_parsed_ += length;
        if (packet) {
            seen_packet_ = true;
            record.offset = offset;
            record.end = pos_;
            return true;
        }
    }
    if (failed() || pos_ >= end_) return false;
    if (end_is_eof_)
        return fail(Problem::truncated, "truncated block" + at(pos_) + " (" + std::to_string(end_ - pos_) +
                                            " bytes left at the end of the file)");
    return fail(Problem::range_mismatch, "block" + at(pos_) + " crosses the end of its range");
}

bool CaptureReader::read_prefix() {
    // From the first section's start to its first packet: the interfaces every later
    // range needs. (A file that describes interfaces after its first packet says so in
    // layout_after_data(), and is read from the start.)
    prefix_read_ = true;
    pos_ = header_.data_begin;
    end_ = source_.size();
    end_is_eof_ = true;
    while (pos_ < end_) {
        bool cut = false;
        const uint8_t* p = view(8, &cut);
        if (p == nullptr) break;
        const uint32_t type = block_type(p);
        if (type == pcapng::kEnhancedPacketBlock || type == pcapng::kPacketBlock ||
            type == pcapng::kSimplePacketBlock || type == pcapng::kSectionHeaderBlock)
            break;
        Record unused;
        if (!next_pcapng(unused)) break;  // only non-packet blocks before the first packet
    }
    return !failed();
}

}  // namespace linecap::format
