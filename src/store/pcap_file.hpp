// Reading finished capture files: the pcap file header, record parsing with the same
// plausibility rules as startup recovery (output/recovery.hpp), and a buffered record
// reader over a byte range of a file or of memory.
//
// Everything here is defensive: the input may be truncated, corrupt or hostile (it is
// fuzzed, tests/store/fuzz/). No function trusts a length it has not checked, and every
// problem becomes one line of text naming the offset.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "output/pcap_format.hpp"
#include "util/result.hpp"

namespace linecap::store {

inline constexpr uint32_t kPcapngMagic = 0x0a0d0d0a;  // pcapng section header block
inline constexpr size_t kPcapFileHeaderSize = sizeof(pcap::FileHeader);
inline constexpr size_t kPcapRecordHeaderSize = sizeof(pcap::RecordHeader);

struct PcapHeaderInfo {
    bool swapped = false;     // written big-endian
    bool nanosecond = true;   // false: microsecond timestamps
    uint16_t version_major = 2;
    uint16_t version_minor = 4;
    uint32_t snaplen = 0;     // as written in the header
    uint32_t linktype = 0;
    // The largest caplen a plausible record may have: the header's snaplen, or
    // pcap::kMaxSnaplen when the header's is 0 or larger than that.
    uint32_t caplen_limit() const;
};

// Parses a pcap file header (the first 24 bytes of the file). Errors, one line each:
// "truncated file header (N bytes)", "pcapng files are not supported yet",
// "not a pcap file (magic 0x…)", "link type N is not supported (only Ethernet)".
Result<PcapHeaderInfo> parse_pcap_header(std::span<const uint8_t> bytes);

// One record. `data` points into the reader's buffer: valid until the next call.
struct RawRecord {
    uint64_t offset = 0;  // file offset of the record header
    uint64_t ts_ns = 0;   // microsecond files: converted (× 1000), exact
    uint32_t caplen = 0;
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    uint64_t end() const { return offset + kPcapRecordHeaderSize + caplen; }
};

enum class RecordParse { ok, incomplete, corrupt };

// Parses the record starting at `p` (`avail` bytes available). incomplete: the header
// or the data runs past `avail`; corrupt: implausible (caplen > caplen_limit(),
// caplen > len, len == 0, timestamp fraction out of range), with the reason in `problem`.
RecordParse parse_record(const PcapHeaderInfo& header, const uint8_t* p, size_t avail,
                         uint64_t offset, RawRecord& out, std::string* problem);

// pread-like access to the bytes of one file, on disk or in memory (fuzzing, tests).
class ByteSource {
public:
    virtual ~ByteSource() = default;
    // Reads up to `n` bytes at `offset`; returns the count (short only at the end of the
    // source) or -1 with errno set.
    virtual ssize_t read_at(void* dst, size_t n, uint64_t offset) const = 0;
    virtual uint64_t size() const = 0;
};

class MemorySource final : public ByteSource {
public:
    explicit MemorySource(std::span<const uint8_t> bytes) : bytes_(bytes) {}
    ssize_t read_at(void* dst, size_t n, uint64_t offset) const override;
    uint64_t size() const override { return bytes_.size(); }

private:
    std::span<const uint8_t> bytes_;
};

// An open capture file: descriptor, size and mtime at open, parsed header.
class PcapFile final : public ByteSource {
public:
    // Opens and reads the header; errors are "<reason>" (the caller adds the path).
    static Result<std::unique_ptr<PcapFile>> open(const std::string& path);
    ~PcapFile() override;
    PcapFile(const PcapFile&) = delete;
    PcapFile& operator=(const PcapFile&) = delete;

    ssize_t read_at(void* dst, size_t n, uint64_t offset) const override;
    uint64_t size() const override { return size_; }
    int64_t mtime_ns() const { return mtime_ns_; }
    const PcapHeaderInfo& header() const { return header_; }
    const std::string& path() const { return path_; }
    // Tells the kernel the file will be read sequentially (scans) or at random (indexed).
    void advise_sequential() const;
    void advise_random() const;

private:
    PcapFile() = default;
    int fd_ = -1;
    uint64_t size_ = 0;
    int64_t mtime_ns_ = 0;
    PcapHeaderInfo header_;
    std::string path_;
};

// Reads the records of [begin, end) of a source in order, through one buffer (large
// preads, not one per record). `end` is either the end of the source — then bytes that
// do not form a complete record are reported as a truncated record — or a record
// boundary known from an index — then a record crossing it is an index mismatch.
class RecordReader {
public:
    RecordReader(const ByteSource& source, const PcapHeaderInfo& header, uint64_t begin,
                 uint64_t end, size_t buffer_size = 1 << 20);

    // Continues with another range of the same source, keeping the buffer (and the bytes
    // already in it, when the new range starts inside them).
    void reset(uint64_t begin, uint64_t end);

    // Next record; false at the end of the range or on an error (then error() says why,
    // naming the offset; records before it were good).
    bool next(RawRecord& record);
    enum class Problem { none, io, truncated, corrupt, index_mismatch };
    const std::string& error() const { return error_; }
    Problem problem() const { return problem_; }
    bool failed() const { return problem_ != Problem::none; }
    // Offset of the next record to read (after an error: of the bad record).
    uint64_t position() const { return pos_; }

private:
    bool refill();

    const ByteSource& source_;
    PcapHeaderInfo header_;
    uint64_t pos_;
    uint64_t end_;
    bool end_is_eof_;
    std::unique_ptr<uint8_t[]> buffer_;  // not zero-filled: only bytes read are looked at
    size_t buffer_size_;
    uint64_t buf_offset_ = 0;  // file offset of buffer_[0]
    size_t buf_len_ = 0;
    std::string error_;
    Problem problem_ = Problem::none;
};

// Writes a nanosecond pcap (little-endian, linktype 1) to a descriptor through a buffer.
class PcapWriter {
public:
    explicit PcapWriter(int fd, size_t buffer_size = 1 << 20);
    Status write_header(uint32_t snaplen);
    Status write_record(uint64_t ts_ns, uint32_t caplen, uint32_t len, const uint8_t* data);
    Status flush();
    uint64_t packets() const { return packets_; }
    uint64_t bytes() const { return bytes_; }

private:
    Status put(const void* data, size_t n);
    int fd_;
    std::vector<uint8_t> buffer_;
    size_t used_ = 0;
    uint64_t packets_ = 0;
    uint64_t bytes_ = 0;
};

}  // namespace linecap::store
