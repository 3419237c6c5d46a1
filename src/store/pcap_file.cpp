#include "store/pcap_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/errno_text.hpp"

namespace linecap::store {
namespace {

uint32_t load_u32(const uint8_t* p, bool swapped) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return swapped ? __builtin_bswap32(v) : v;
}

uint16_t load_u16(const uint8_t* p, bool swapped) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return swapped ? __builtin_bswap16(v) : v;
}

std::string hex32(uint32_t v) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", v);
    return text;
}

}  // namespace

uint32_t PcapHeaderInfo::caplen_limit() const {
    if (snaplen == 0 || snaplen > pcap::kMaxSnaplen) return pcap::kMaxSnaplen;
    return snaplen;
}

Result<PcapHeaderInfo> parse_pcap_header(std::span<const uint8_t> bytes) {
    if (bytes.size() >= 4) {
        const uint32_t magic = load_u32(bytes.data(), false);
        if (magic == kPcapngMagic) return runtime_error("pcapng files are not supported yet");
    }
    if (bytes.size() < kPcapFileHeaderSize)
        return runtime_error("truncated file header (" + std::to_string(bytes.size()) + " of " +
                             std::to_string(kPcapFileHeaderSize) + " bytes)");
    PcapHeaderInfo h;
    const uint32_t magic = load_u32(bytes.data(), false);
    switch (magic) {
        case pcap::kMagicNanosecond: h.nanosecond = true; h.swapped = false; break;
        case pcap::kMagicMicrosecond: h.nanosecond = false; h.swapped = false; break;
        case __builtin_bswap32(pcap::kMagicNanosecond): h.nanosecond = true; h.swapped = true; break;
        case __builtin_bswap32(pcap::kMagicMicrosecond): h.nanosecond = false; h.swapped = true; break;
        default: return runtime_error("not a pcap file (magic " + hex32(magic) + ")");
    }
    h.version_major = load_u16(bytes.data() + 4, h.swapped);
    h.version_minor = load_u16(bytes.data() + 6, h.swapped);
    h.snaplen = load_u32(bytes.data() + 16, h.swapped);
    // Strict: anything but plain Ethernet (including FCS bits in the upper half) is refused,
    // since the filter is compiled for DLT_EN10MB.
    h.linktype = load_u32(bytes.data() + 20, h.swapped);
    if (h.version_major != 2)
        return runtime_error("unsupported pcap version " + std::to_string(h.version_major) + "." +
                             std::to_string(h.version_minor));
    if (h.linktype != pcap::kLinktypeEthernet)
        return runtime_error("link type " + std::to_string(h.linktype) +
                             " is not supported (only Ethernet, 1)");
    return h;
}

RecordParse parse_record(const PcapHeaderInfo& header, const uint8_t* p, size_t avail,
                         uint64_t offset, RawRecord& out, std::string* problem) {
    if (avail < kPcapRecordHeaderSize) return RecordParse::incomplete;
    const uint32_t sec = load_u32(p, header.swapped);
    const uint32_t frac = load_u32(p + 4, header.swapped);
    const uint32_t caplen = load_u32(p + 8, header.swapped);
    const uint32_t len = load_u32(p + 12, header.swapped);
    std::string detail;
    if (caplen > header.caplen_limit()) {
        detail = "caplen " + std::to_string(caplen) + " > snaplen " + std::to_string(header.caplen_limit());
    } else if (len == 0) {
        detail = "original length 0";
    } else if (caplen > len) {
        detail = "caplen " + std::to_string(caplen) + " > original length " + std::to_string(len);
    } else if (frac >= (header.nanosecond ? 1000000000u : 1000000u)) {
        detail = "timestamp fraction " + std::to_string(frac) + " out of range";
    }
    if (!detail.empty()) {
        if (problem) *problem = "corrupt record at offset " + std::to_string(offset) + ": " + detail;
        return RecordParse::corrupt;
    }
    if (avail - kPcapRecordHeaderSize < caplen) return RecordParse::incomplete;
    out.offset = offset;
    out.ts_ns = uint64_t{sec} * 1000000000u + (header.nanosecond ? frac : uint64_t{frac} * 1000u);
    out.caplen = caplen;
    out.len = len;
    out.data = p + kPcapRecordHeaderSize;
    return RecordParse::ok;
}

ssize_t MemorySource::read_at(void* dst, size_t n, uint64_t offset) const {
    if (offset >= bytes_.size()) return 0;
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n, bytes_.size() - offset));
    std::memcpy(dst, bytes_.data() + offset, k);
    return static_cast<ssize_t>(k);
}

Result<std::unique_ptr<PcapFile>> PcapFile::open(const std::string& path) {
    std::unique_ptr<PcapFile> file(new PcapFile());
    file->path_ = path;
    file->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (file->fd_ < 0) return runtime_error("open: " + errno_text(errno));
    struct stat st {};
    if (::fstat(file->fd_, &st) != 0) return runtime_error("fstat: " + errno_text(errno));
    if (!S_ISREG(st.st_mode)) return runtime_error("not a regular file");
    file->size_ = static_cast<uint64_t>(st.st_size);
    file->mtime_ns_ = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    uint8_t bytes[kPcapFileHeaderSize];
    const ssize_t n = file->read_at(bytes, sizeof bytes, 0);
    if (n < 0) return runtime_error("read: " + errno_text(errno));
    auto header = parse_pcap_header({bytes, static_cast<size_t>(n)});
    if (!header) return header.error();
    file->header_ = header.value();
    return file;
}

PcapFile::~PcapFile() {
    if (fd_ >= 0) ::close(fd_);
}

ssize_t PcapFile::read_at(void* dst, size_t n, uint64_t offset) const {
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

void PcapFile::advise_sequential() const { (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL); }
void PcapFile::advise_random() const { (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_RANDOM); }

RecordReader::RecordReader(const ByteSource& source, const PcapHeaderInfo& header, uint64_t begin,
                           uint64_t end, size_t buffer_size)
    : source_(source), header_(header), pos_(begin), end_(std::min(end, source.size())),
      end_is_eof_(end >= source.size()),
      buffer_size_(std::max(buffer_size, kPcapRecordHeaderSize + size_t{header.caplen_limit()})) {
    buffer_.reset(new uint8_t[buffer_size_]);
}

void RecordReader::reset(uint64_t begin, uint64_t end) {
    pos_ = begin;
    end_ = std::min(end, source_.size());
    end_is_eof_ = end >= source_.size();
    error_.clear();
    problem_ = Problem::none;
    // The buffered bytes stay valid (same source) but may extend past the new end; the
    // parser is always bounded by end_.
}

bool RecordReader::refill() {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer_size_, end_ - pos_));
    const ssize_t n = source_.read_at(buffer_.get(), want, pos_);
    if (n < 0) {
        error_ = "read at offset " + std::to_string(pos_) + ": " + errno_text(errno);
        problem_ = Problem::io;
        return false;
    }
    buf_offset_ = pos_;
    buf_len_ = static_cast<size_t>(n);
    if (buf_len_ < want) {
        // The file shrank since it was opened (or a short read): what remains is treated
        // like the end of the file.
        end_ = pos_ + buf_len_;
        end_is_eof_ = true;
    }
    return true;
}

bool RecordReader::next(RawRecord& record) {
    if (failed() || pos_ >= end_) return false;
    bool refilled = false;
    for (;;) {
        if (buf_len_ == 0 || pos_ < buf_offset_ || pos_ >= buf_offset_ + buf_len_) {
            if (!refill()) return false;
            refilled = true;
            if (pos_ >= end_) return false;  // the file shrank to exactly here
        }
        const size_t in_buf = static_cast<size_t>(buf_offset_ + buf_len_ - pos_);
        const size_t avail = static_cast<size_t>(std::min<uint64_t>(in_buf, end_ - pos_));
        std::string problem;
        const RecordParse r =
            parse_record(header_, buffer_.get() + (pos_ - buf_offset_), avail, pos_, record, &problem);
        if (r == RecordParse::ok) {
            pos_ = record.end();
            return true;
        }
        if (r == RecordParse::corrupt) {
            error_ = problem;
            problem_ = Problem::corrupt;
            return false;
        }
        // Incomplete: the buffer ends before the record does (refill at the record and
        // parse again), or the range does. The buffer holds the largest plausible record,
        // so after a refill only the end of the range can cut a record short.
        if (buf_offset_ + buf_len_ >= end_ || refilled) {
            if (end_is_eof_) {
                error_ = "truncated record at offset " + std::to_string(pos_) + " (" +
                         std::to_string(end_ - pos_) + " bytes left at the end of the file)";
                problem_ = Problem::truncated;
            } else {
                error_ = "record at offset " + std::to_string(pos_) +
                         " crosses the end of its index block (index does not match the file)";
                problem_ = Problem::index_mismatch;
            }
            return false;
        }
        buf_len_ = 0;  // force a refill at pos_
    }
}

PcapWriter::PcapWriter(int fd, size_t buffer_size) : fd_(fd), buffer_(buffer_size) {}

Status PcapWriter::put(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
        if (used_ == buffer_.size()) {
            if (auto s = flush(); !s) return s;
        }
        const size_t k = std::min(n, buffer_.size() - used_);
        std::memcpy(buffer_.data() + used_, p, k);
        used_ += k;
        p += k;
        n -= k;
    }
    return {};
}

Status PcapWriter::write_header(uint32_t snaplen) {
    const pcap::FileHeader h = pcap::file_header(snaplen);
    return put(&h, sizeof h);
}

Status PcapWriter::write_record(uint64_t ts_ns, uint32_t caplen, uint32_t len, const uint8_t* data) {
    uint8_t hdr[kPcapRecordHeaderSize];
    pcap::encode_record_header(hdr, ts_ns, caplen, len);
    if (auto s = put(hdr, sizeof hdr); !s) return s;
    if (auto s = put(data, caplen); !s) return s;
    ++packets_;
    bytes_ += kPcapRecordHeaderSize + caplen;
    return {};
}

Status PcapWriter::flush() {
    size_t done = 0;
    while (done < used_) {
        const ssize_t n = ::write(fd_, buffer_.data() + done, used_ - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return runtime_error("write: " + errno_text(errno));
        done += static_cast<size_t>(n);
    }
    used_ = 0;
    return {};
}

}  // namespace linecap::store
