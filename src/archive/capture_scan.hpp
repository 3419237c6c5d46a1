// Reading capture files back for the daemon's own bookkeeping: the longest valid prefix
// of a pcap or pcapng file, its packets' time span, the pcapng interface and statistics
// blocks, and (optionally) the SHA-256 of the whole file, in one pass over a read-only
// mapping. The reading itself — and so what counts as a valid record — is the format
// library's (format/capture_reader.hpp); this adds the summary and the hash.
//
// Used by startup recovery (where to cut an in-progress file), by `linecapd verify`
// (re-hash and re-count a finished file), by manifests of recovered files and by the
// retention inventory (first packet of a file without a manifest), for compressed files
// too (through their decompressed bytes). A record the reader
// refuses in strict mode (truncated, zero-filled, or not what linecapd writes: len 0,
// caplen > len or > snaplen, a fraction out of range) ends the valid prefix: that catches
// the zero-filled or garbage tail a file system can leave after a crash.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "format/capture_reader.hpp"
#include "util/io_status.hpp"
#include "util/result.hpp"

namespace linecap {


// The last Interface Statistics Block of a pcapng file.
using CaptureStatistics = format::Statistics;

struct CaptureScan {
    IoStatus io;                      // a read failed: the other fields are meaningless
    std::optional<FileKind> format;   // what the magic says; none: neither
    bool header_valid = false;
    std::string header_problem;       // why not, when !header_valid
    std::string record_problem;       // why the valid prefix ends before the file does
    uint64_t file_bytes = 0;
    uint64_t valid_bytes = 0;         // header + complete, plausible records/blocks
    uint64_t packets = 0;             // in the valid prefix
    uint64_t wire_bytes = 0;          // their original lengths
    uint64_t first_ns = 0;            // first and last packet timestamps in file order
    uint64_t last_ns = 0;             // (UTC ns), 0 when there is no packet
    uint32_t snaplen = 0;             // pcap header / first pcapng interface
    std::string interface_name;       // pcapng: first IDB's if_name
    std::string interface_description;
    std::optional<CaptureStatistics> statistics;  // pcapng: the last ISB in the valid prefix
    std::string sha256;               // hex, of the whole file, when asked for

    bool complete() const { return io.ok() && header_valid && valid_bytes == file_bytes; }
};

// "pcap", "pcapng" or, when the magic is neither, "unknown" (as a manifest records it).
const char* format_name(const CaptureScan& scan);

struct ScanOptions {
    bool hash = false;                // SHA-256 of the whole file (valid prefix or not)
    bool first_packet_only = false;   // stop after the first packet (first_ns == last_ns)
};

CaptureScan scan_capture(int fd, ScanOptions options = {});
// The same over any source (a compressed file's decompressed bytes: file_bytes, the hash
// and the records are those of the capture file it holds).
CaptureScan scan_capture(const format::ByteSource& source, ScanOptions options = {});

// Opens a finished capture file as stored: `capture_path` ("dir/x.pcap"), or when that
// is gone its compressed form (layout::compressed_name: a compression finished
// meanwhile). Errors: "<reason>" (the caller adds the path).
Result<std::unique_ptr<format::OpenFile>> open_stored_capture(const std::string& capture_path);

// What stat says of a finished capture file as stored (plain, else compressed): the size
// of its capture bytes (a compressed file's from its seek table), the stored file's
// mtime and ctime. nullopt when neither is there (or the seek table is unreadable).
struct StoredStat {
    uint64_t size = 0;
    uint64_t stored_size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    bool compressed = false;
};
std::optional<StoredStat> stat_stored_capture(const std::string& capture_path);
// Whether the capture file is stored, plain or compressed.
bool capture_stored(const std::string& capture_path);

}  // namespace linecap
