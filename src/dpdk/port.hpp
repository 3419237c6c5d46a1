// Port: one configured, started ethdev (PCI function or vdev) with N rx queues.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "dpdk/rss.hpp"
#include "util/result.hpp"

struct rte_mempool;

namespace linecap {

// The ethdev name EAL registered for a configured device: the PCI address as given, or
// a vdev's name without its arguments ("net_af_xdp0,iface=veth0" → "net_af_xdp0").
std::string ethdev_name(const PortConfig& port);

// Largest frame the port must receive for its MTU: Ethernet header, two VLAN tags, CRC.
uint32_t max_frame_len(unsigned mtu);

struct PortInfo {
    uint16_t port_id = 0;
    int socket = 0;              // NUMA socket (0 when the device does not say)
    std::string driver;
    bool scatter_capable = false;
};

// The rx descriptor count a port really gets. net_af_xdp (DPDK 22.11) counts a full
// XDP socket rx ring nowhere (the kernel's rx_ring_full is not read by the PMD), which
// only stays impossible while the ring holds at least 4096 descriptors; so af_xdp ports
// get at least that many — every drop must be counted.
unsigned effective_rx_descriptors(const PortInfo& info, unsigned requested);

// Looks the device up after EAL probed it.
Result<PortInfo> find_port(const PortConfig& config);

class Port {
public:
    // Configures rx queues (RSS as planned), MTU, promiscuous mode and starts the port.
    static Result<std::unique_ptr<Port>> open(const PortConfig& config, const PortInfo& info,
                                              rte_mempool* pool, unsigned mbuf_data_room);
    ~Port();  // stop + close
    Port(const Port&) = delete;
    Port& operator=(const Port&) = delete;

    uint16_t id() const { return info_.port_id; }
    const std::string& name() const { return name_; }
    int socket() const { return info_.socket; }
    unsigned rx_queues() const { return rx_queues_; }
    unsigned rx_descriptors() const { return rx_descriptors_; }

    // Stop receiving (rte_eth_dev_stop) without closing, so final stats stay readable.
    void stop();

private:
    Port(std::string name, PortInfo info) : name_(std::move(name)), info_(std::move(info)) {}
    std::string name_;
    PortInfo info_;
    unsigned rx_queues_ = 0;
    unsigned rx_descriptors_ = 0;
    bool started_ = false;
};

}  // namespace linecap
