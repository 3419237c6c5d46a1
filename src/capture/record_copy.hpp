// Appending one packet to a write block as a pcap record: header + min(len, snaplen)
// bytes, walking the mbuf chain for scattered (jumbo) packets.
#pragma once

#include <rte_mbuf.h>
#include <rte_memcpy.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "output/block.hpp"
#include "config/config.hpp"
#include "format/pcap_format.hpp"
#include "format/pcapng_format.hpp"

namespace linecap {

// --- the timestamps of a burst ---------------------------------------------------------
//
// A burst's packets share one timestamp (the TSC read once per burst: BurstTime), or each
// has its own (the port's rx timestamp: PacketTimes, capture/timestamps.hpp). The burst
// functions below, dedup and the flow cap take either; with BurstTime they compile to the
// code of one timestamp per burst.
struct BurstTime {
    uint64_t ns;
    uint64_t operator[](uint16_t) const { return ns; }
};
struct PacketTimes {
    const uint64_t* ns;
    uint64_t operator[](uint16_t i) const { return ns[i]; }
};
inline BurstTime burst_times(uint64_t ns) { return {ns}; }
inline BurstTime burst_times(BurstTime t) { return t; }
inline PacketTimes burst_times(PacketTimes t) { return t; }
template <class Times>
inline constexpr bool kPerPacketTimes = std::is_same_v<std::remove_cvref_t<Times>, PacketTimes>;

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
template <FileKind F>
static inline uint32_t record_bytes(uint32_t caplen) {
    if constexpr (F == FileKind::pcap) return static_cast<uint32_t>(pcap::record_size(caplen));
    return static_cast<uint32_t>(pcapng::record_size(caplen));
}

// Encodes one record at `dst` (header, data, pcapng trailer); returns where it ends.
// `t` is ts_ns split for pcap (pcap::record_time), done once per burst by the caller.
template <FileKind F>
static inline uint8_t* write_record(uint8_t* dst, const rte_mbuf* m, uint32_t caplen, uint64_t ts_ns,
                                    [[maybe_unused]] pcap::RecordTime t) {
    if constexpr (F == FileKind::pcap) {
        dst += pcap::encode_record_header(dst, t, caplen, m->pkt_len);
        copy_packet_data(dst, m, caplen);
        return dst + caplen;
    } else {
        uint8_t* data = dst + pcapng::encode_epb_header(dst, ts_ns, caplen, m->pkt_len);
        copy_packet_data(data, m, caplen);
        pcapng::encode_epb_trailer(data + caplen, caplen);
        return dst + record_bytes<F>(caplen);
    }
}

// The caller has checked block.room() >= record_bytes<F>(caplen). pcap unless told
// otherwise (what the tests of the record layout exercise).
template <FileKind F = FileKind::pcap>
static inline void append_record(WriteBlock& block, const rte_mbuf* m, uint32_t caplen, uint64_t ts_ns) {
    write_record<F>(block.tail(), m, caplen, ts_ns, pcap::record_time(ts_ns));
    block.used += record_bytes<F>(caplen);
    block.packets += 1;
    block.wire_bytes += m->pkt_len;
}

// --- whole bursts (the worker's fast path) ---------------------------------------------------
//
// A burst is measured first (record bytes of the kept packets, and wire bytes of all of
// them: one pass over the mbuf headers that rx just wrote), and when the queue's block has
// room for all of it the records go in with no per-packet room check, one timestamp split
// and the block's bookkeeping updated once. Only the burst that fills a block takes the
// per-packet path.

// How far ahead append_burst prefetches packet data (l3fwd uses 3 to 8).
constexpr unsigned kAppendPrefetch = 4;

struct BurstSize {
    uint32_t record_bytes = 0;  // of the kept packets
    uint32_t kept = 0;
    uint64_t wire_bytes = 0;    // pkt_len of every packet, kept or not (rx_bytes)
    uint64_t kept_wire_bytes = 0;
};

// The snap length of packet i: keep[i] is 0 (not written) or the most bytes its record may
// hold — the filter's verdict (libpcap returns the snap length it was compiled with), or
// what a capture policy cut it to (capture/flow_cap.hpp). keep == nullptr: every packet
// is kept whole (up to snaplen).
static inline uint32_t kept_snaplen(const uint64_t* keep, uint16_t i, uint32_t snaplen) {
    return keep == nullptr ? snaplen : static_cast<uint32_t>(std::min<uint64_t>(keep[i], snaplen));
}

template <FileKind F>
static inline BurstSize measure_burst(rte_mbuf* const* pkts, uint16_t n, const uint64_t* keep, uint32_t snaplen) {
    BurstSize s;
    for (uint16_t i = 0; i < n; ++i) {
        const uint32_t len = pkts[i]->pkt_len;
        s.wire_bytes += len;
        if (keep != nullptr && keep[i] == 0) continue;
        s.record_bytes += record_bytes<F>(record_caplen(pkts[i], kept_snaplen(keep, i, snaplen)));
        s.kept += 1;
        s.kept_wire_bytes += len;
    }
    return s;
}

// Where a record's packet bytes start, from the record's start.
template <FileKind F>
inline constexpr uint32_t record_data_offset = F == FileKind::pcap ? sizeof(pcap::RecordHeader) : pcapng::kEpbHeaderSize;

// append_burst's default recorder: nobody asks where the packets went (compiles away).
struct NoRecorder {
    void operator()(uint16_t, const uint8_t*, uint32_t, const rte_mbuf*) const {}
};

// Appends the kept packets of a burst, stamped `times` (one uint64_t ns for all, or
// BurstTime / PacketTimes). The caller has checked that the block has room for
// measure_burst(...).record_bytes; an empty block's first_ts_ns becomes the first kept
// packet's. `on_record(i, bytes, caplen, m)` learns where each packet's bytes went
// (bytes == nullptr: not written); capture/dedup.hpp's DedupRecorder remembers them.
template <FileKind F, class Recorder = NoRecorder, class Times>
static inline void append_burst(WriteBlock& block, rte_mbuf* const* pkts, uint16_t n, const uint64_t* keep,
                                uint32_t snaplen, Times times, const BurstSize& size, Recorder on_record = {}) {
    const auto ts = burst_times(times);
    constexpr bool per_packet = kPerPacketTimes<decltype(ts)>;
    uint8_t* dst = block.tail();
    const pcap::RecordTime burst_t = pcap::record_time(ts[0]);
    uint16_t last_kept = 0;
    for (uint16_t i = 0; i < n; ++i) {
        if (i + kAppendPrefetch < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + kAppendPrefetch], void*));
        if (keep != nullptr && keep[i] == 0) {
            on_record(i, nullptr, 0, pkts[i]);
            continue;
        }
        if constexpr (per_packet) {
            if (block.packets == 0 && dst == block.tail()) block.first_ts_ns = ts[i];
            last_kept = i;
        }
        const uint32_t caplen = record_caplen(pkts[i], kept_snaplen(keep, i, snaplen));
        on_record(i, dst + record_data_offset<F>, caplen, pkts[i]);
        dst = write_record<F>(dst, pkts[i], caplen, ts[i], per_packet ? pcap::record_time(ts[i]) : burst_t);
    }
    if constexpr (!per_packet) {
        if (block.packets == 0) block.first_ts_ns = ts[0];
    }
    block.used += size.record_bytes;
    block.packets += size.kept;
    block.last_ts_ns = ts[last_kept];
    block.wire_bytes += size.kept_wire_bytes;
}

}  // namespace linecap
