// Appending one packet to a write block as a pcap record: header + min(len, snaplen)
// bytes, walking the mbuf chain for scattered (jumbo) packets.
#pragma once

#include <rte_mbuf.h>
#include <rte_memcpy.h>

#include <algorithm>
#include <cstdint>

#include "output/block.hpp"
#include "config/config.hpp"
#include "output/pcap_format.hpp"
#include "output/pcapng_format.hpp"

namespace linecap {

// Bytes the record for `m` takes in a block at snap length `snaplen`.
static inline uint32_t record_caplen(const rte_mbuf* m, uint32_t snaplen) {
    return std::min<uint32_t>(m->pkt_len, snaplen);
}

// Copies `len` bytes from the start of a (possibly multi-segment) mbuf.
static inline void copy_packet_data(uint8_t* dst, const rte_mbuf* m, uint32_t len) {
    if (likely(m->data_len >= len)) {
        rte_memcpy(dst, rte_pktmbuf_mtod(m, const uint8_t*), len);
        return;
    }
    while (len > 0 && m != nullptr) {
        const uint32_t chunk = std::min<uint32_t>(m->data_len, len);
        rte_memcpy(dst, rte_pktmbuf_mtod(m, const uint8_t*), chunk);
        dst += chunk;
        len -= chunk;
        m = m->next;
    }
}

// Bytes one record takes in a block, by file format.
template <FileFormat F>
static inline uint32_t record_bytes(uint32_t caplen) {
    if constexpr (F == FileFormat::pcap) return static_cast<uint32_t>(pcap::record_size(caplen));
    return static_cast<uint32_t>(pcapng::record_size(caplen));
}

// The caller has checked block.room() >= record_bytes<F>(caplen).
template <FileFormat F>
static inline void append_record(WriteBlock& block, const rte_mbuf* m, uint32_t caplen, uint64_t ts_ns) {
    uint8_t* dst = block.tail();
    if constexpr (F == FileFormat::pcap) {
        dst += pcap::encode_record_header(dst, ts_ns, caplen, m->pkt_len);
        copy_packet_data(dst, m, caplen);
    } else {
        dst += pcapng::encode_epb_header(dst, ts_ns, caplen, m->pkt_len);
        copy_packet_data(dst, m, caplen);
        pcapng::encode_epb_trailer(dst + caplen, caplen);
    }
    block.used += record_bytes<F>(caplen);
    block.packets += 1;
    block.wire_bytes += m->pkt_len;
}

// pcap unless told otherwise: what the tests of the record layout exercise.
static inline void append_record(WriteBlock& block, const rte_mbuf* m, uint32_t caplen, uint64_t ts_ns) {
    append_record<FileFormat::pcap>(block, m, caplen, ts_ns);
}

}  // namespace linecap
