// Port: one configured, started ethdev (PCI function or vdev) with N rx queues.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "dpdk/rss.hpp"
#include "util/result.hpp"

struct rte_mempool;
struct rte_eth_dev_info;

namespace linecap {

// The ethdev name EAL registered for a configured device: the PCI address as given, or
// a vdev's name without its arguments ("net_af_xdp0,iface=veth0" → "net_af_xdp0").
std::string ethdev_name(const PortConfig& port);

// Largest frame the port must receive for its MTU: Ethernet header, two VLAN tags, CRC.
uint32_t max_frame_len(unsigned mtu);

// What a port can do, as far as the capture plan (capture/plan.hpp) is concerned.
struct PortInfo {
    uint16_t port_id = 0;
    int socket = -1;                 // NUMA socket; -1 when unknown
    std::string driver;              // rte_eth_dev_info::driver_name, e.g. net_ixgbe
    bool probed = false;             // false: assumed before EAL probed the device (see below)
    bool scatter_capable = false;    // RTE_ETH_RX_OFFLOAD_SCATTER offered
    bool rx_timestamp_capable = false;  // RTE_ETH_RX_OFFLOAD_TIMESTAMP offered (dpdk/rx_timestamp.hpp)
    unsigned max_rx_queues = 0;      // 0: unknown
    unsigned rx_desc_min = 0;        // rte_eth_desc_lim; 0: no limit known
    unsigned rx_desc_max = 0;
    unsigned rx_desc_align = 1;
    unsigned max_mtu = 0;            // 0: unknown
};

// From the device's rte_eth_dev_info (pure: the fake dev_info tests call it with the values
// 82599 and X710 ports report).
PortInfo port_info_from_dev_info(uint16_t port_id, int socket, const rte_eth_dev_info& dev_info);

// Before EAL probes the device, the conservative assumptions: the NUMA node the caller read
// from sysfs (-1 for virtual devices), the driver named by a vdev's name (net_af_xdp0 →
// net_af_xdp; empty for PCI), no scattered rx (so each mbuf holds a whole frame: the larger
// pool), and no queue, descriptor or MTU limits (real devices only trim those, so the
// request is the upper bound: the configuration allows only powers of two 64..32768 for
// rx_descriptors, which the alignment of every device we know divides).
PortInfo assumed_port_info(const PortConfig& config, int numa_node);

// The rx descriptor count a port gets: the request within the device's limits (as
// rte_eth_dev_adjust_nb_rx_tx_desc rounds it). net_af_xdp (DPDK 22.11) keeps 2048 frames
// on the fill ring; with a socket rx ring of at least 4096 descriptors the rx ring cannot
// fill first, so af_xdp ports get at least that many (a full rx ring is counted all the
// same, as xsk_ring_full: dpdk/xdp_socket.hpp).
unsigned effective_rx_descriptors(const PortInfo& info, unsigned requested);

// What is known when a device rejects an rx queue setup, for an error a user can act on:
// the request, the device's limits (rte_eth_dev_info) and the pool the queue draws from.
struct RxQueueSetupFacts {
    std::string driver;
    bool infinite_rx = false;      // net_pcap infinite_rx=1: every packet of its file held in mbufs
    unsigned queues = 0;
    unsigned descriptors = 0;      // per queue, as asked for
    unsigned desc_min = 0;         // rx_desc_lim (0: the device does not say)
    unsigned desc_max = 0;
    unsigned desc_align = 0;
    unsigned pool_mbufs = 0;       // the pool's size
    unsigned pool_free = 0;        // free in it when the queue was set up
    unsigned configured_mbufs = 0; // capture.mbufs (0: sized automatically)
};

// The likely cause of a rejected rx queue setup and the key to change, in one sentence
// ("rx_descriptors outside the device's limits", "not enough mbufs for the descriptors",
// net_pcap infinite_rx's copy of its file); pure, so it is unit-tested with fake facts.
std::string rx_queue_setup_hint(const RxQueueSetupFacts& facts);

// Looks the device up after EAL probed it.
Result<PortInfo> find_port(const PortConfig& config);

// How a port is set up (planned by plan_capture from the config and its PortInfo).
struct PortSetup {
    unsigned rx_queues = 0;
    unsigned rx_descriptors = 0;     // per queue, within the device's limits
    unsigned mtu = 0;                // at most the device's maximum
    bool scatter = false;            // frames larger than one mbuf: RTE_ETH_RX_OFFLOAD_SCATTER
    bool rx_timestamp = false;       // per-packet stamps: RTE_ETH_RX_OFFLOAD_TIMESTAMP
};

class Port {
public:
    // Configures rx queues, descriptors, MTU and scattered rx as planned, RSS, promiscuous
    // mode, and starts the port. `configured_mbufs` (capture.mbufs, 0 = automatic) only goes
    // into error messages.
    static Result<std::unique_ptr<Port>> open(const PortConfig& config, const PortInfo& info,
                                              const PortSetup& setup, rte_mempool* pool,
                                              unsigned configured_mbufs = 0);
    ~Port();  // stop + close
    Port(const Port&) = delete;
    Port& operator=(const Port&) = delete;

    uint16_t id() const { return info_.port_id; }
    const std::string& name() const { return name_; }
    int socket() const { return info_.socket; }
    unsigned rx_queues() const { return rx_queues_; }
    unsigned rx_descriptors() const { return rx_descriptors_; }
    // net_af_xdp: each rx queue's AF_XDP socket (dpdk/xdp_socket.hpp); empty otherwise.
    const std::vector<int>& xdp_sockets() const { return xdp_sockets_; }

    // Stop receiving (rte_eth_dev_stop) without closing, so final stats stay readable.
    void stop();

private:
    Port(std::string name, PortInfo info) : name_(std::move(name)), info_(std::move(info)) {}
    std::string name_;
    PortInfo info_;
    unsigned rx_queues_ = 0;
    unsigned rx_descriptors_ = 0;
    std::vector<int> xdp_sockets_;
    bool started_ = false;
};

}  // namespace linecap
