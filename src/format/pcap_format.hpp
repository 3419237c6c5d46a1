// On-disk record formats: nanosecond pcap (default) and pcapng.
//
// Header encoders write into caller memory and return the bytes written; they are on the
// worker's hot path, so they are inline, branch-free where possible and never allocate.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace linecap::pcap {

constexpr uint32_t kMagicNanosecond = 0xa1b23c4d;  // pcap with ns timestamps
constexpr uint32_t kMagicMicrosecond = 0xa1b2c3d4;
constexpr uint32_t kLinktypeEthernet = 1;
constexpr uint32_t kMaxSnaplen = 262144;

struct FileHeader {
    uint32_t magic;
    uint16_t version_major;
    uint16_t version_minor;
    int32_t thiszone;
    uint32_t sigfigs;
    uint32_t snaplen;
    uint32_t linktype;
};
static_assert(sizeof(FileHeader) == 24);

struct RecordHeader {
    uint32_t ts_sec;
    uint32_t ts_frac;  // nanoseconds for kMagicNanosecond
    uint32_t caplen;
    uint32_t len;
};
static_assert(sizeof(RecordHeader) == 16);

inline FileHeader file_header(uint32_t snaplen) {
    return FileHeader{kMagicNanosecond, 2, 4, 0, 0, snaplen, kLinktypeEthernet};
}

// Writes one record header; the caller copies `caplen` bytes of packet data after it.
inline size_t encode_record_header(uint8_t* dst, uint64_t ts_ns, uint32_t caplen, uint32_t len) {
    RecordHeader h;
    h.ts_sec = static_cast<uint32_t>(ts_ns / 1000000000u);
    h.ts_frac = static_cast<uint32_t>(ts_ns % 1000000000u);
    h.caplen = caplen;
    h.len = len;
    std::memcpy(dst, &h, sizeof h);
    return sizeof h;
}

constexpr size_t record_size(uint32_t caplen) { return sizeof(RecordHeader) + caplen; }

// The timestamp half of a record header, split once per burst: every record of a burst
// carries the same time, and the split is a 64-bit division (by a constant) per call.
struct RecordTime {
    uint32_t ts_sec;
    uint32_t ts_frac;
};

inline RecordTime record_time(uint64_t ts_ns) {
    return RecordTime{static_cast<uint32_t>(ts_ns / 1000000000u), static_cast<uint32_t>(ts_ns % 1000000000u)};
}

// encode_record_header with a pre-split time: the same 16 bytes, one 16-byte store.
inline size_t encode_record_header(uint8_t* dst, RecordTime t, uint32_t caplen, uint32_t len) {
    const RecordHeader h{t.ts_sec, t.ts_frac, caplen, len};
    std::memcpy(dst, &h, sizeof h);
    return sizeof h;
}

}  // namespace linecap::pcap
