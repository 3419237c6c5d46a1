// The one reader of capture files: pcap (µs and ns timestamps, either byte order) and
// pcapng (SHB, IDB, EPB, SPB, the obsolete PB, ISB; other blocks skipped; several
// sections and interfaces), over a byte source (a file, or memory for tests and fuzzing).
// Recovery, verify and retention (archive/capture_scan), the index builder, extract and
// stats (store/) all read through it, so one set of validity checks decides what a
// record is.
//
// Everything here is defensive: the input may be truncated, corrupt or hostile (it is
// fuzzed: tests/fuzz/fuzz_capture_reader.cpp). No length is trusted before it is checked;
// memory is bounded (one buffer of at most kMaxBlockBytes plus the caller's size) and
// every byte is looked at a bounded number of times; every problem is one line of text
// naming the offset.
//
// What counts as a record (the checks, in one place, CaptureReader::next):
//   pcap    the 16-byte header and caplen bytes fit in the file; caplen <= kMaxSnaplen
//           (libpcap's bound for Ethernet); a header of 16 zero bytes is damage (the
//           zero-filled tail a file system leaves after a crash), not an empty packet.
//           As libpcap/tcpdump (not as the strict old reader): len = 0 and caplen > len
//           are read as they are; a timestamp fraction >= 1 s is added as it is; a
//           record with caplen > the header's snaplen yields its first snaplen bytes
//           (caplen = snaplen) and the reader moves past all of it.
//   pcapng  a block length >= 12, a multiple of 4, <= kMaxBlockBytes, repeated at the
//           block's end; an SHB with a valid byte-order magic (each section may have its
//           own byte order) and major version 1; an EPB/PB on a known interface with
//           its data inside the block; an SPB after an interface exists. caplen beyond
//           the interface's snaplen is cut to it, as for pcap. Option lists are read up
//           to the first option that does not fit.
//   Either  the link-type field keeps its upper 16 bits (pcap: FCS length bits such as
//           0x30000001, read as libpcap does: link type = low 16 bits, FCS bytes, if
//           any, are part of the captured data); what link type a caller accepts is the
//           caller's business (the store filters Ethernet only).
// Strict mode adds what linecapd itself never writes — len = 0, caplen > len, caplen >
// snaplen, a pcap timestamp fraction >= 1 s — for the daemon's own files (recovery,
// verify, retention: archive/capture_scan), where such a record is the garbage a crash
// leaves, not a packet. The store reads every file, its own included, as libpcap does.
// Truncated (the file ends inside a record or block) and corrupt (a check above fails)
// are told apart: recovery cuts either; extract and the index report which.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "format/pcap_format.hpp"
#include "util/file_kind.hpp"
#include "util/result.hpp"

namespace linecap::format {

// The largest pcapng block (and so the largest buffer) the reader accepts: libpcap's
// own bound on a block (sf-pcapng.c), far above any packet block (kMaxSnaplen + options).
inline constexpr uint32_t kMaxBlockBytes = 16u << 20;

// What a file's first four bytes say it is (nullopt: neither).
std::optional<FileKind> kind_of_magic(uint32_t magic);

// pread-like access to the bytes of one file, on disk or in memory.
class ByteSource {
public:
    virtual ~ByteSource() = default;
    // Reads up to `n` bytes at `offset`; returns the count (short only at the end of the
    // source) or -1 with errno set.
    virtual ssize_t read_at(void* dst, size_t n, uint64_t offset) const = 0;
    virtual uint64_t size() const = 0;
    // The whole source as memory, when it is memory (the reader then copies nothing).
    virtual const uint8_t* contiguous() const { return nullptr; }
};

class MemorySource final : public ByteSource {
public:
    explicit MemorySource(std::span<const uint8_t> bytes) : bytes_(bytes) {}
    ssize_t read_at(void* dst, size_t n, uint64_t offset) const override;
    uint64_t size() const override { return bytes_.size(); }
    const uint8_t* contiguous() const override { return bytes_.data(); }

private:
    std::span<const uint8_t> bytes_;
};

// A capture file opened from disk: its capture bytes (decompressed when the file is
// compressed: zstd_seekable.hpp), and what the file on disk says. open_capture_file()
// (zstd_seekable.hpp) opens either kind.
class OpenFile : public ByteSource {
public:
    virtual int64_t mtime_ns() const = 0;
    virtual const std::string& path() const = 0;
    // Bytes on disk (the compressed size for a compressed file).
    virtual uint64_t stored_size() const = 0;
    virtual bool compressed() const = 0;
    // Tells the kernel the file will be read sequentially (scans) or at random (indexed).
    virtual void advise_sequential() const = 0;
    virtual void advise_random() const = 0;
    // Tells the kernel that [offset, offset + length) will be read soon: reading starts
    // now, in the background, so the reads of many small ranges overlap instead of each
    // waiting for the disk in turn. Nothing for sources without a page cache to fill.
    virtual void will_need(uint64_t /*offset*/, uint64_t /*length*/) const {}
    // Whether reading a few hundred bytes costs about what it returns, so that a query
    // reads single records rather than the index blocks around them: a local plain file.
    // Not a compressed one (every read decompresses a frame) nor an object in an object
    // store (a request each, and each block checked whole: archive/archive_store.hpp).
    virtual bool small_reads_cheap() const { return !compressed(); }
};

// An open regular file: descriptor, and size and mtime when it was opened.
class FileSource final : public OpenFile {
public:
    // Errors are "<reason>" (the caller adds the path).
    static Result<std::unique_ptr<FileSource>> open(const std::string& path);
    ~FileSource() override;
    FileSource(const FileSource&) = delete;
    FileSource& operator=(const FileSource&) = delete;

    ssize_t read_at(void* dst, size_t n, uint64_t offset) const override;
    uint64_t size() const override { return size_; }
    int64_t mtime_ns() const override { return mtime_ns_; }
    const std::string& path() const override { return path_; }
    uint64_t stored_size() const override { return size_; }
    bool compressed() const override { return false; }
    void advise_sequential() const override;
    void advise_random() const override;
    void will_need(uint64_t offset, uint64_t length) const override;

private:
    FileSource() = default;
    int fd_ = -1;
    uint64_t size_ = 0;
    int64_t mtime_ns_ = 0;
    std::string path_;
};

// The link-type field: pcap's 32-bit header field (link type in the low 16 bits, FCS
// information above, libpcap's LT_* macros), or a pcapng IDB's 16-bit link type.
constexpr uint16_t link_type(uint32_t field) { return static_cast<uint16_t>(field & 0xffffu); }

// The caplen beyond which a record is cut, for a snaplen as written (libpcap: 0 or more
// than the maximum means the maximum).
constexpr uint32_t effective_snaplen(uint32_t snaplen) {
    return snaplen == 0 || snaplen > pcap::kMaxSnaplen ? pcap::kMaxSnaplen : snaplen;
}

struct Interface {
    uint32_t link_field = pcap::kLinktypeEthernet;
    uint32_t snaplen = 0;          // as written
    uint8_t tsresol = 9;           // pcapng if_tsresol (pcap: 6 or 9)
    int64_t tsoffset_s = 0;        // pcapng if_tsoffset
    std::string name;              // pcapng if_name / if_description
    std::string description;
};

// A pcapng Interface Statistics Block (the last one read).
struct Statistics {
    uint32_t interface = 0;
    uint64_t start_ns = 0;         // isb_starttime
    uint64_t end_ns = 0;           // isb_endtime
    std::optional<uint64_t> ifrecv;
    std::optional<uint64_t> ifdrop;
    std::optional<uint64_t> filteraccept;
    std::string comment;
};

// What the start of a file says.
struct CaptureHeader {
    FileKind kind = FileKind::pcap;
    bool swapped = false;          // byte order opposite to the host's (pcapng: first section)
    bool nanosecond = true;        // pcap: ns (else µs) timestamps
    uint16_t version_major = 2;
    uint16_t version_minor = 4;
    uint32_t snaplen = 0;          // pcap header (pcapng: 0; see the interfaces)
    uint32_t link_field = pcap::kLinktypeEthernet;  // pcap header (pcapng: per interface)
    uint64_t data_begin = 0;       // offset of the first record or block after the header
};

// Parses the file header from the first bytes of a file. Errors, one line each: "empty
// file", "shorter than a pcap file header (N bytes)", "unknown magic 0x…", "pcapng
// byte-order magic 0x…", "unsupported pcap version 3.0", "incomplete pcapng section
// header block", ….
Result<CaptureHeader> parse_header(std::span<const uint8_t> first_bytes);
// The same, reading the first bytes of `source`.
Result<CaptureHeader> read_header(const ByteSource& source);
// How many bytes parse_header needs at most to decide.
inline constexpr size_t kHeaderProbeBytes = 64;

// One packet. `data` points into the reader's buffer (or the source's memory): valid
// until the next call.
struct Record {
    uint64_t offset = 0;     // file offset of the record (pcap) or block (pcapng)
    uint64_t end = 0;        // offset just past it
    uint64_t ts_ns = 0;      // UTC ns (µs and other resolutions converted; saturating)
    uint32_t caplen = 0;     // bytes at `data` (cut to the snaplen, as libpcap does)
    uint32_t len = 0;        // original length, as written
    uint32_t interface = 0;  // pcapng interface id in its section (pcap: 0)
    const uint8_t* data = nullptr;
};

class CaptureReader {
public:
    enum class Problem { none, io, truncated, corrupt, range_mismatch };

    // Reads the records of [begin, end) of `source` (begin >= header.data_begin). `end`
    // is either the end of the source — then bytes that do not form a complete record
    // are reported as truncated — or a record boundary the caller knows (an index) —
    // then a record crossing it is a range mismatch.
    CaptureReader(const ByteSource& source, const CaptureHeader& header, uint64_t begin, uint64_t end,
                  size_t buffer_size = 1u << 20);
    // The whole file after its header.
    CaptureReader(const ByteSource& source, const CaptureHeader& header, size_t buffer_size = 1u << 20);

    // Continues with another range of the same source, keeping the buffer (and the bytes
    // in it) and what the file said so far (sections, interfaces). A pcapng range that
    // starts after data_begin first reads the blocks before the first packet, so the
    // interfaces are known (see layout_after_data()).
    void seek(uint64_t begin, uint64_t end);

    // Also refuse what linecapd never writes (see the top of this file).
    void set_strict(bool strict) { strict_ = strict; }

    // The next packet; false at the end of the range or on a problem (then error() says
    // why, naming the offset; the records before it were good).
    bool next(Record& record);

    Problem problem() const { return problem_; }
    bool failed() const { return problem_ != Problem::none; }
    const std::string& error() const { return error_; }
    // Offset of the next record or block to read (after a problem: of the bad one).
    uint64_t position() const { return pos_; }

    const CaptureHeader& header() const { return header_; }
    // The interfaces of the current section (pcap: one, from the file header).
    const std::vector<Interface>& interfaces() const { return interfaces_; }
    // Sections started so far (pcap: 1).
    uint32_t sections() const { return sections_; }
    // A section header or interface block came after the first packet: a range that
    // skips bytes may miss it, so such a file can only be read from its start.
    bool layout_after_data() const { return layout_after_data_; }
    const std::optional<Statistics>& statistics() const { return statistics_; }
    // Bytes of records and blocks parsed so far.
    uint64_t bytes_parsed() const { return bytes_parsed_; }

private:
    bool fail(Problem problem, std::string message);
    // Makes [pos_, pos_ + n) addressable; false at the end of the range (with the reason
    // set when `n` bytes were needed but the range ends first) or on an I/O error.
    const uint8_t* view(size_t n, bool* short_range);
    bool next_pcap(Record& record);
    bool next_pcapng(Record& record);
    bool read_prefix();
    uint32_t block_type(const uint8_t* p) const;
    void section_header(const uint8_t* block, uint32_t length);
    bool interface_block(const uint8_t* block, uint32_t length);
    // Strict mode: why a record is not one linecapd could have written ("" = it could).
    std::string strict_problem(uint32_t caplen, uint32_t len, uint32_t snaplen) const;
    void statistics_block(const uint8_t* block, uint32_t length);

    const ByteSource& source_;
    CaptureHeader header_;
    uint64_t pos_;
    uint64_t end_;
    bool end_is_eof_;
    const uint8_t* memory_;               // source_.contiguous()
    std::unique_ptr<uint8_t[]> buffer_;   // not zero-filled: only bytes read are looked at
    size_t buffer_size_;
    uint64_t buf_offset_ = 0;             // file offset of buffer_[0]
    size_t buf_len_ = 0;

    bool swapped_;                        // of the current section
    std::vector<Interface> interfaces_;
    uint32_t sections_ = 0;
    bool seen_packet_ = false;
    bool layout_after_data_ = false;
    bool prefix_read_ = false;
    bool strict_ = false;
    std::optional<Statistics> statistics_;
    uint64_t bytes_parsed_ = 0;

    Problem problem_ = Problem::none;
    std::string error_;
};

// pcapng if_tsresol units → ns (bit 7 clear: 10^-n s, set: 2^-n s), saturating.
uint64_t units_to_ns(uint64_t units, uint8_t tsresol);

}  // namespace linecap::format
