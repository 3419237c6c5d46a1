// Appending one packet to a write block as a pcap record: header + min(len, snaplen)
// bytes, walking the mbuf chain for scattered (jumbo) packets.
#pragma once

#include <rte_mbuf.h>
#include <rte_memcpy.h>

#include <algorithm>
#include <cstdint>

#include "output/block.hpp"
#include "output/pcap_format.hpp"

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

// The caller has checked block.room() >= pcap::record_size(caplen).
static inline void append_record(WriteBlock& block, const rte_mbuf* m, uint32_t caplen, uint64_t ts_ns) {
    uint8_t* dst = block.tail();
    dst += pcap::encode_record_header(dst, ts_ns, caplen, m->pkt_len);
    copy_packet_data(dst, m, caplen);
    block.used += static_cast<uint32_t>(pcap::record_size(caplen));
    block.packets += 1;
    block.wire_bytes += m->pkt_len;
}

}  // namespace linecap
