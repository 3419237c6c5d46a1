// pcapng records as the worker writes them: one Enhanced Packet Block per packet, on
// interface 0 (each file holds one stream, i.e. one port queue, described by the file's
// single Interface Description Block with if_tsresol = 9: timestamps in nanoseconds).
#pragma once

#include <cstdint>
#include <cstring>

namespace linecap::pcapng {

constexpr uint32_t kSectionHeaderBlock = 0x0a0d0d0a;
constexpr uint32_t kInterfaceDescriptionBlock = 0x00000001;
constexpr uint32_t kEnhancedPacketBlock = 0x00000006;
constexpr uint32_t kInterfaceStatisticsBlock = 0x00000005;
constexpr uint32_t kByteOrderMagic = 0x1a2b3c4d;

// type, total length, interface id, ts high, ts low, captured length, original length
constexpr size_t kEpbHeaderSize = 28;
constexpr size_t kEpbTrailerSize = 4;  // total length again

constexpr uint32_t padded(uint32_t n) { return (n + 3u) & ~3u; }

constexpr size_t record_size(uint32_t caplen) { return kEpbHeaderSize + padded(caplen) + kEpbTrailerSize; }

// Writes the EPB header; the caller copies `caplen` bytes after it and then calls
// encode_epb_trailer at dst + kEpbHeaderSize + caplen.
inline size_t encode_epb_header(uint8_t* dst, uint64_t ts_ns, uint32_t caplen, uint32_t len, uint32_t interface_id = 0) {
    const uint32_t total = static_cast<uint32_t>(record_size(caplen));
    const uint32_t words[7] = {kEnhancedPacketBlock, total, interface_id, static_cast<uint32_t>(ts_ns >> 32),
                               static_cast<uint32_t>(ts_ns), caplen, len};
    std::memcpy(dst, words, sizeof words);
    return kEpbHeaderSize;
}

// Zero padding to a 4-byte boundary, then the repeated block length.
inline void encode_epb_trailer(uint8_t* after_data, uint32_t caplen) {
    const uint32_t pad = padded(caplen) - caplen;
    std::memset(after_data, 0, 4);  // at most 3 bytes of padding; the 4th is overwritten
    const uint32_t total = static_cast<uint32_t>(record_size(caplen));
    std::memcpy(after_data + pad, &total, sizeof total);
}

}  // namespace linecap::pcapng
