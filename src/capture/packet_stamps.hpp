// Each packet's timestamp from the port's rx timestamp field (capture.timestamps,
// dpdk/rx_timestamp.hpp), on the worker: one flag test, one load and a multiply (or the NIC
// clock's mapping) per packet, never going back within the stream.
#pragma once

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <cstdint>

#include "capture/tsc_clock.hpp"

namespace linecap {

// Where a port's stamps are and what they mean: UTC in units of ns_per_unit (net_pcap),
// or NIC clock ticks mapped to UTC by `clock` (not null).
struct PortStamps {
    int offset = 0;               // of the rx timestamp dynamic field
    uint64_t flag = 0;            // the rx timestamp dynamic flag
    uint64_t ns_per_unit = 1;
    const TscClock* clock = nullptr;
};

struct StampOutcome {
    uint32_t clamped = 0;    // raised to the stamp before them
    uint32_t unstamped = 0;  // without the port's stamp: the burst's TSC time
};

// ts[i] = packet i's UTC ns, never below `last` nor the packet before; `last` becomes the
// burst's latest.
inline StampOutcome stamp_packets(const PortStamps& port, rte_mbuf* const* pkts, uint16_t n, uint64_t burst_ns,
                                  uint64_t& last, uint64_t* ts) {
    const TscClock::Mapping clock = port.clock != nullptr ? port.clock->mapping() : TscClock::Mapping{0, 0, 0};
    StampOutcome out;
    uint64_t latest = last;
    for (uint16_t i = 0; i < n; ++i) {
        const rte_mbuf* m = pkts[i];
        uint64_t t = burst_ns;
        if (likely(m->ol_flags & port.flag)) {
            const uint64_t v = *RTE_MBUF_DYNFIELD(m, port.offset, const rte_mbuf_timestamp_t*);
            t = port.clock != nullptr ? clock.to_ns(v) : v * port.ns_per_unit;
        } else {
            ++out.unstamped;
        }
        if (unlikely(t < latest)) {
            t = latest;
            ++out.clamped;
        }
        latest = t;
        ts[i] = t;
    }
    last = latest;
    return out;
}

}  // namespace linecap
