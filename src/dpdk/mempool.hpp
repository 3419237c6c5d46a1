// Mempool: one packet-buffer pool per NUMA socket that has ports, sized from the config.
#pragma once

#include <memory>
#include <string>

#include "util/result.hpp"

struct rte_mempool;

namespace linecap {

struct MempoolSizing {
    unsigned descriptors = 0;    // sum of rx_descriptors × rx_queues of the socket's ports
    unsigned workers = 0;        // worker lcores that poll those ports
    unsigned burst = 64;
    unsigned cache = 256;
    unsigned data_room = 0;      // mbuf data room (headroom included)
};

// Every rx descriptor holds an mbuf, every worker may hold one burst in flight, and each
// lcore's mempool cache can park `cache` more; a 25 % margin absorbs PMD internals
// (af_xdp fill queues, net_pcap infinite_rx copies). Rounded to 2^n - 1, the size
// rte_mempool is most efficient with.
unsigned mempool_size(const MempoolSizing& sizing);

class Mempool {
public:
    static Result<std::unique_ptr<Mempool>> create(const std::string& name, unsigned count,
                                                   unsigned cache, unsigned data_room, int socket);
    ~Mempool();
    Mempool(const Mempool&) = delete;
    Mempool& operator=(const Mempool&) = delete;

    rte_mempool* get() const { return pool_; }
    unsigned size() const { return count_; }
    int socket() const { return socket_; }

private:
    Mempool(rte_mempool* pool, unsigned count, int socket) : pool_(pool), count_(count), socket_(socket) {}
    rte_mempool* pool_;
    unsigned count_;
    int socket_;
};

}  // namespace linecap
