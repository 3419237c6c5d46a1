#include "dpdk/port.hpp"

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <vector>

#include "dpdk/xdp_socket.hpp"

namespace linecap {

namespace {

// Descriptors for the tx queues a PMD insists on; nothing is ever sent on them.
constexpr uint16_t kIdleTxDescriptors = 512;

std::string errtext(int rc) { return std::string(rte_strerror(rc < 0 ? -rc : rc)); }

Error call_error(const char* call, int rc) {
    return runtime_error(std::string(call) + ": " + errtext(rc) + " (" + std::to_string(rc) + ")");
}

// DPDK 22.11's net_af_packet opens each queue's socket for every interface (ETH_P_ALL) and
// binds it to its own only after setting up the ring: what any other interface carried in
// between (milliseconds, more on a loaded machine) is in the ring, and would be captured and
// counted as the port's. Nothing in the rings has been captured yet, so all of it goes,
// uncounted: the port's counters start again from zero. Bounded, in case the interface
// itself is busy enough to keep the rings from running dry.
uint64_t discard_queued_frames(uint16_t id, unsigned queues) {
    constexpr uint16_t kBurst = 64;
    constexpr uint64_t kAtMost = uint64_t{1} << 20;
    rte_mbuf* burst[kBurst];
    uint64_t discarded = 0;
    for (unsigned q = 0; q < queues; ++q) {
        uint16_t n = 0;
        do {
            n = rte_eth_rx_burst(id, static_cast<uint16_t>(q), burst, kBurst);
            rte_pktmbuf_free_bulk(burst, n);
            discarded += n;
        } while (n == kBurst && discarded < kAtMost);
    }
    rte_eth_stats_reset(id);
    return discarded;
}

// Reads back the key the device actually uses: a PMD that ignores or rewrites it would
// silently split conversations over two queues (and two files).
void verify_symmetric_key(const std::string& name, uint16_t id, size_t key_size) {
    std::vector<uint8_t> key(key_size);  // plan_rss sized it from dev_info (40 when the PMD reports 0)
    rte_eth_rss_conf conf{};
    conf.rss_key = key.data();
    conf.rss_key_len = static_cast<uint8_t>(key.size());
    if (rte_eth_dev_rss_hash_conf_get(id, &conf) != 0) return;  // the PMD cannot say
    if (!rss_key_is_symmetric(key)) {
        spdlog::warn("port {}: the device reports an RSS key that is not symmetric: the two directions of a "
                     "flow may land on different queues", name);
    }
}

// The worker lcores' per-lcore caches and bursts need mbufs beyond the descriptors; a queue
// left with fewer spare than this starves as soon as traffic flows.
constexpr unsigned kSpareMbufsPerQueue = 512;

}  // namespace

std::string rx_queue_setup_hint(const RxQueueSetupFacts& f) {
    const std::string mbufs_now =
        f.configured_mbufs ? "capture.mbufs is " + std::to_string(f.configured_mbufs)
                           : "capture.mbufs is 0 (sized from the descriptors)";
    const bool below = f.desc_min && f.descriptors < f.desc_min;
    const bool above = f.desc_max && f.descriptors > f.desc_max;
    const bool misaligned = f.desc_align > 1 && f.descriptors % f.desc_align != 0;
    if (below || above || misaligned) {
        return f.driver + " takes " + std::to_string(f.desc_min) + ".." + std::to_string(f.desc_max) +
               " rx descriptors in steps of " + std::to_string(std::max(f.desc_align, 1u)) +
               ": set ports[].rx_descriptors (now " + std::to_string(f.descriptors) + ") within that";
    }
    if (f.infinite_rx) {
        return f.driver + " with infinite_rx copies every packet of each rx_pcap file into mbufs of the port's "
               "pool when its queue is set up, and the pool (" + std::to_string(f.pool_mbufs) + " mbufs, " +
               std::to_string(f.pool_free) + " free; " + mbufs_now +
               ") cannot hold them: set capture.mbufs to at least the packets of all the files plus " +
               std::to_string(f.queues * (f.descriptors + kSpareMbufsPerQueue)) + " (" +
               std::to_string(f.queues) + " queues x (" + std::to_string(f.descriptors) +
               " descriptors + " + std::to_string(kSpareMbufsPerQueue) + ")), or replay a shorter file";
    }
    if (f.pool_free < f.descriptors + kSpareMbufsPerQueue) {
        return "the pool has " + std::to_string(f.pool_free) + " free mbufs of " + std::to_string(f.pool_mbufs) +
               " for " + std::to_string(f.descriptors) + " descriptors (" + mbufs_now +
               "): raise capture.mbufs or lower ports[].rx_descriptors";
    }
    return "the device accepts " + std::to_string(f.desc_min) + ".." + std::to_string(f.desc_max) +
           " rx descriptors (asked " + std::to_string(f.descriptors) + "); the pool has " +
           std::to_string(f.pool_free) + " free mbufs of " + std::to_string(f.pool_mbufs) + " (" + mbufs_now +
           "); see the driver's log line above for what it rejected";
}

std::string ethdev_name(const PortConfig& port) {
    return port.device.substr(0, port.device.find(','));
}

uint32_t max_frame_len(unsigned mtu) {
    return mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN + 2 * RTE_VLAN_HLEN;
}

PortInfo port_info_from_dev_info(uint16_t port_id, int socket, const rte_eth_dev_info& dev_info) {
    PortInfo info;
    info.port_id = port_id;
    info.socket = socket;
    info.driver = dev_info.driver_name ? dev_info.driver_name : "?";
    info.probed = true;
    info.scatter_capable = (dev_info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER) != 0;
    info.rx_timestamp_capable = (dev_info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP) != 0;
    info.max_rx_queues = dev_info.max_rx_queues;
    info.rx_desc_min = dev_info.rx_desc_lim.nb_min;
    info.rx_desc_max = dev_info.rx_desc_lim.nb_max;
    info.rx_desc_align = std::max<unsigned>(1, dev_info.rx_desc_lim.nb_align);
    info.max_mtu = dev_info.max_mtu;
    return info;
}

PortInfo assumed_port_info(const PortConfig& config, int numa_node) {
    PortInfo info;
    info.socket = numa_node;
    if (!config.is_pci()) {
        std::string name = ethdev_name(config);  // the vdev's driver plus an instance number
        while (!name.empty() && name.back() >= '0' && name.back() <= '9') name.pop_back();
        info.driver = name;
    }
    return info;
}

unsigned effective_rx_descriptors(const PortInfo& info, unsigned requested) {
    constexpr unsigned kAfXdpMinDescriptors = 4096;
    unsigned n = requested;
    if (info.driver == "net_af_xdp" && n < kAfXdpMinDescriptors) n = kAfXdpMinDescriptors;
    // The order of rte_eth_dev_adjust_nb_rx_tx_desc: maximum, minimum, then alignment.
    if (info.rx_desc_max != 0 && n > info.rx_desc_max) n = info.rx_desc_max;
    if (info.rx_desc_min != 0 && n < info.rx_desc_min) n = info.rx_desc_min;
    return (n + info.rx_desc_align - 1) / info.rx_desc_align * info.rx_desc_align;
}

Result<PortInfo> find_port(const PortConfig& config) {
    const std::string name = ethdev_name(config);
    uint16_t port_id = 0;
    if (rte_eth_dev_get_port_by_name(name.c_str(), &port_id) != 0) {
        if (config.is_pci()) {
            return runtime_error("device " + config.device +
                                 " was not probed by DPDK: is it bound to vfio-pci? "
                                 "(scripts/linecap-bind.sh bind " + config.device + ")");
        }
        return runtime_error("vdev " + name + " did not come up (see the DPDK log above for its arguments)");
    }
    rte_eth_dev_info dev_info;
    int rc = rte_eth_dev_info_get(port_id, &dev_info);
    if (rc != 0) return call_error("rte_eth_dev_info_get", rc);
    // Devices that do not say (most vdevs) go with socket 0's pool.
    const int socket = rte_eth_dev_socket_id(port_id);
    return port_info_from_dev_info(port_id, socket < 0 ? 0 : socket, dev_info);
}

Result<std::unique_ptr<Port>> Port::open(const PortConfig& config, const PortInfo& info,
                                         const PortSetup& setup, rte_mempool* pool, unsigned configured_mbufs) {
    std::unique_ptr<Port> port(new Port(config.name, info));
    const uint16_t id = info.port_id;
    auto fail = [&](Error e) { return e.context("port " + config.name + " (" + config.device + ")"); };

    rte_eth_dev_info dev_info;
    int rc = rte_eth_dev_info_get(id, &dev_info);
    if (rc != 0) return fail(call_error("rte_eth_dev_info_get", rc));

    const unsigned queues = setup.rx_queues;
    rte_eth_conf conf{};
    RssPlan rss = plan_rss(config.rss, queues,
                           RssDeviceCaps{dev_info.hash_key_size, dev_info.flow_type_rss_offloads,
                                         dev_info.reta_size});
    if (queues > 1 && config.rss != RssMode::off && !rss.enabled) {
        // Virtual devices spread queues their own way (net_pcap: one file per queue,
        // af_packet: the kernel's fanout); real 82599/X710 ports always offer RSS.
        spdlog::warn("port {}: {} ({}); its {} queues are filled the way the driver decides", config.name,
                     rss.note, info.driver, queues);
    }
    if (rss.enabled) {
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf = rss.hash_types;
        if (!rss.key.empty()) {
            conf.rx_adv_conf.rss_conf.rss_key = rss.key.data();
            conf.rx_adv_conf.rss_conf.rss_key_len = static_cast<uint8_t>(rss.key.size());
        }
        if (rss.trimmed_types) {
            spdlog::warn("port {}: RSS hash types 0x{:x} not offered by {}, using 0x{:x}", config.name,
                         rss.trimmed_types, info.driver, rss.hash_types);
        }
    }

    conf.rxmode.mtu = setup.mtu;
    if (setup.scatter) conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
    if (setup.rx_timestamp) conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;

    // A capture port never transmits, so it asks for no tx queue. Some PMDs (af_xdp,
    // af_packet) only work with rx/tx pairs: for those, idle tx queues are set up too.
    uint16_t tx_queues = 0;
    rc = rte_eth_dev_configure(id, static_cast<uint16_t>(queues), 0, &conf);
    if (rc == -EINVAL) {
        tx_queues = static_cast<uint16_t>(queues);
        rc = rte_eth_dev_configure(id, static_cast<uint16_t>(queues), tx_queues, &conf);
    }
    if (rc != 0) return fail(call_error("rte_eth_dev_configure", rc));

    // The plan already rounded the count the way this call does; it stays for the tx side
    // and as a check that the plan saw the same limits.
    uint16_t nb_rxd = static_cast<uint16_t>(setup.rx_descriptors);
    uint16_t nb_txd = tx_queues ? kIdleTxDescriptors : 0;
    rc = rte_eth_dev_adjust_nb_rx_tx_desc(id, &nb_rxd, &nb_txd);
    if (rc != 0) return fail(call_error("rte_eth_dev_adjust_nb_rx_tx_desc", rc));
    if (nb_rxd != setup.rx_descriptors) {
        spdlog::warn("port {}: rx_descriptors {} adjusted to {} by {}", config.name, setup.rx_descriptors, nb_rxd,
                     info.driver);
    }

    rte_eth_rxconf rxconf = dev_info.default_rxconf;
    rxconf.offloads = conf.rxmode.offloads;
    const bool af_xdp = info.driver == "net_af_xdp";
    for (unsigned q = 0; q < queues; ++q) {
        const std::vector<int> sockets_before = af_xdp ? xdp_socket_fds() : std::vector<int>{};
        rc = rte_eth_rx_queue_setup(id, static_cast<uint16_t>(q), nb_rxd, static_cast<unsigned>(info.socket),
                                    &rxconf, pool);
        if (rc == 0 && af_xdp) {
            // The socket the PMD made for this queue: the one that was not there before.
            std::vector<int> created;
            const std::vector<int> sockets_after = xdp_socket_fds();
            std::set_difference(sockets_after.begin(), sockets_after.end(), sockets_before.begin(),
                                sockets_before.end(), std::back_inserter(created));
            if (created.size() == 1) {
                port->xdp_sockets_.push_back(created.front());
            } else {
                spdlog::warn("port {}: rx queue {}: {} new AF_XDP sockets after its setup, not one: the kernel's "
                             "drops on it (rx ring full, fill ring empty) are not counted by reason",
                             config.name, q, created.size());
            }
        }
        if (rc != 0) {
            RxQueueSetupFacts facts;
            facts.driver = info.driver;
            facts.infinite_rx = info.driver == "net_pcap" && config.device.find("infinite_rx=1") != std::string::npos;
            facts.queues = queues;
            facts.descriptors = nb_rxd;
            facts.desc_min = dev_info.rx_desc_lim.nb_min;
            facts.desc_max = dev_info.rx_desc_lim.nb_max;
            facts.desc_align = dev_info.rx_desc_lim.nb_align;
            facts.pool_mbufs = pool->size;
            facts.pool_free = rte_mempool_avail_count(pool);
            facts.configured_mbufs = configured_mbufs;
            // A configuration the device cannot take: exit 78, with the key to change.
            return fail(config_error("rte_eth_rx_queue_setup: " + errtext(rc) + " (" + std::to_string(rc) +
                                     "): " + rx_queue_setup_hint(facts))
                            .context("rx queue " + std::to_string(q)));
        }
    }

    for (uint16_t q = 0; q < tx_queues; ++q) {
        rc = rte_eth_tx_queue_setup(id, q, nb_txd, static_cast<unsigned>(info.socket), nullptr);
        if (rc != 0) return fail(call_error("rte_eth_tx_queue_setup", rc).context("tx queue " + std::to_string(q)));
    }

    if (config.promiscuous) {
        rc = rte_eth_promiscuous_enable(id);
        if (rc != 0) spdlog::warn("port {}: promiscuous mode: {} (capturing what the device delivers)",
                                  config.name, errtext(rc));
    }

    rc = rte_eth_dev_start(id);
    if (rc != 0) return fail(call_error("rte_eth_dev_start", rc));
    port->started_ = true;
    port->rx_queues_ = queues;
    port->rx_descriptors_ = nb_rxd;
    if (info.driver == "net_af_packet") {
        if (const uint64_t n = discard_queued_frames(id, queues); n > 0)
            spdlog::info("port {}: discarded {} frames queued before the port started (net_af_packet's sockets "
                         "take every interface's packets until they are bound)",
                         config.name, n);
    }

    if (rss.enabled && config.rss == RssMode::symmetric) verify_symmetric_key(config.name, id, rss.key.size());

    rte_eth_link link{};
    char link_text[RTE_ETH_LINK_MAX_STR_LEN] = "";
    if (rte_eth_link_get_nowait(id, &link) == 0) rte_eth_link_to_str(link_text, sizeof link_text, &link);
    spdlog::info("port {}: {} driver {} socket {}: {} rx queues × {} descriptors, mtu {}, rss {}{}; {}",
                 config.name, config.device, info.driver, info.socket, queues, nb_rxd, setup.mtu,
                 rss.enabled ? to_string(config.rss) : "not used",
                 rss.enabled && dev_info.reta_size ? " (reta " + std::to_string(dev_info.reta_size) + ")" : "",
                 link_text);
    return port;
}

void Port::stop() {
    if (started_) {
        rte_eth_dev_stop(info_.port_id);
        started_ = false;
    }
}

Port::~Port() {
    stop();
    rte_eth_dev_close(info_.port_id);
}

}  // namespace linecap
