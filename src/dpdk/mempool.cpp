#include "dpdk/mempool.hpp"

#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

namespace linecap {

unsigned mempool_size(const MempoolSizing& s) {
    uint64_t need = s.descriptors + uint64_t(s.workers) * (s.burst + s.cache) + s.cache;
    need += need / 4;
    uint64_t n = 1;
    while (n - 1 < need) n <<= 1;
    return static_cast<unsigned>(n - 1);
}

Result<std::unique_ptr<Mempool>> Mempool::create(const std::string& name, unsigned count,
                                                 unsigned cache, unsigned data_room, int socket) {
    rte_mempool* pool = rte_pktmbuf_pool_create(name.c_str(), count, cache, 0,
                                                static_cast<uint16_t>(data_room), socket);
    if (pool == nullptr) {
        return runtime_error("rte_pktmbuf_pool_create(" + name + ", " + std::to_string(count) +
                             " mbufs, socket " + std::to_string(socket) + "): " + rte_strerror(rte_errno) +
                             " (not enough hugepage memory on that socket?)");
    }
    return std::unique_ptr<Mempool>(new Mempool(pool, count, socket));
}

Mempool::~Mempool() { rte_mempool_free(pool_); }

}  // namespace linecap
