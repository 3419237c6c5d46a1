// Per-packet rx timestamps from a port: RTE_ETH_RX_OFFLOAD_TIMESTAMP and the mbuf's rx
// timestamp dynamic field (rte_mbuf_dyn_rx_timestamp_register), and what the field's value
// means for each driver (doc/timestamps.md):
//
//   net_pcap (DPDK 22.11)  microseconds since the UNIX epoch, taken from the record it
//                          replays (tv_sec * 10^6 + tv_usec; the PMD opens its file at
//                          libpcap's µs precision, so a ns file's stamps arrive cut to µs).
//                          The PMD registers the field itself at probe and always fills it.
//   a driver offering RTE_ETH_RX_OFFLOAD_TIMESTAMP (ice, mlx5, idpf)
//                          ticks of the NIC's clock, read with rte_eth_read_clock; the
//                          control thread maps them to UTC against CLOCK_REALTIME.
//   anything else (ixgbe, i40e, af_xdp, af_packet, memif, virtio)
//                          no per-packet stamp: the TSC, once per burst.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.hpp"
#include "util/result.hpp"

namespace linecap {

struct PortInfo;

enum class StampSource : uint8_t {
    tsc,         // the host's TSC read once per burst
    port_utc,    // the field holds UTC already (net_pcap: the replayed file's times)
    port_clock,  // the field holds NIC clock ticks, mapped to UTC by the control thread
};

// "tsc" or "port" (the manifest's clock.source); port_detail tells the two port kinds apart.
const char* source_name(StampSource source);
// "" (tsc), "replayed-file" or "nic-clock".
const char* port_detail(StampSource source);

struct RxTimestampPlan {
    StampSource source = StampSource::tsc;
    bool request_offload = false;  // ask the port for RTE_ETH_RX_OFFLOAD_TIMESTAMP
    uint32_t ns_per_unit = 1;      // port_utc: the field's unit in ns
    std::string note;              // why this source, for the start log
};

// Pure: the device's capabilities and the configured mode → where the port's stamps come
// from. capture.timestamps: port on a port without per-packet stamps is a configuration
// error naming the port and its driver.
Result<RxTimestampPlan> plan_rx_timestamps(TimestampMode mode, const std::string& port_name, const PortInfo& info);

// Where the stamp and its flag are in an mbuf (registered once, idempotently).
struct RxTimestampField {
    int offset = -1;
    uint64_t flag = 0;
};
Result<RxTimestampField> register_rx_timestamp_field();

// The NIC clock's current value (rte_eth_read_clock); an error when the driver has none.
Result<uint64_t> read_port_clock(uint16_t port_id);

}  // namespace linecap
