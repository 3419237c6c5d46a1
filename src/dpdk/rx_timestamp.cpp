#include "dpdk/rx_timestamp.hpp"

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf_dyn.h>

#include "dpdk/port.hpp"

namespace linecap {

const char* source_name(StampSource source) { return source == StampSource::tsc ? "tsc" : "port"; }

const char* port_detail(StampSource source) {
    switch (source) {
        case StampSource::tsc: return "";
        case StampSource::port_utc: return "replayed-file";
        case StampSource::port_clock: return "nic-clock";
    }
    return "";
}

Result<RxTimestampPlan> plan_rx_timestamps(TimestampMode mode, const std::string& port_name, const PortInfo& info) {
    RxTimestampPlan plan;
    if (mode == TimestampMode::tsc) {
        plan.note = "TSC per burst (capture.timestamps: tsc)";
        return plan;
    }
    if (info.driver == "net_pcap") {
        plan.source = StampSource::port_utc;
        plan.ns_per_unit = 1000;
        plan.note = "per packet from the replayed file (net_pcap: microseconds)";
        return plan;
    }
    if (info.rx_timestamp_capable) {
        plan.source = StampSource::port_clock;
        plan.request_offload = true;
        plan.note = "per packet from the NIC clock (RTE_ETH_RX_OFFLOAD_TIMESTAMP), mapped to UTC";
        return plan;
    }
    const std::string why = info.driver + " has no per-packet rx timestamp (RTE_ETH_RX_OFFLOAD_TIMESTAMP)";
    if (mode == TimestampMode::port) {
        return config_error("capture.timestamps: port: port " + port_name + ": " + why +
                            (info.driver == "net_ixgbe" || info.driver == "net_i40e"
                                 ? "; the 82599 and X710 stamp only PTP packets (doc/timestamps.md)"
                                 : "") +
                            "; use auto or tsc");
    }
    plan.note = "TSC per burst (" + why + ")";
    return plan;
}

Result<RxTimestampField> register_rx_timestamp_field() {
    RxTimestampField field;
    if (rte_mbuf_dyn_rx_timestamp_register(&field.offset, &field.flag) != 0)
        return runtime_error(std::string("rte_mbuf_dyn_rx_timestamp_register: ") + rte_strerror(rte_errno));
    return field;
}

Result<uint64_t> read_port_clock(uint16_t port_id) {
    uint64_t ticks = 0;
    const int rc = rte_eth_read_clock(port_id, &ticks);
    if (rc != 0) return runtime_error(std::string("rte_eth_read_clock: ") + rte_strerror(-rc));
    return ticks;
}

}  // namespace linecap
