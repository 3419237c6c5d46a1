#include "dpdk/xdp_socket.hpp"

#include <dirent.h>
#include <linux/if_xdp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

namespace linecap {

std::vector<int> xdp_socket_fds() {
    std::vector<int> fds;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return fds;
    const int own = ::dirfd(dir);
    while (const dirent* e = ::readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || fd == own) continue;
        int domain = 0;
        socklen_t len = sizeof domain;
        if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_XDP)
            fds.push_back(static_cast<int>(fd));
    }
    ::closedir(dir);
    std::sort(fds.begin(), fds.end());
    return fds;
}

std::optional<XdpSocketCounts> read_xdp_socket_counts(int fd) {
    xdp_statistics stats{};
    socklen_t len = sizeof stats;
    if (::getsockopt(fd, SOL_XDP, XDP_STATISTICS, &stats, &len) != 0) return std::nullopt;
    XdpSocketCounts c;
    c.rx_dropped = stats.rx_dropped;
    // An older kernel fills only the first three fields and says so in len.
    if (len >= sizeof stats) {
        c.rx_ring_full = stats.rx_ring_full;
        c.fill_ring_empty = stats.rx_fill_ring_empty_descs;
    }
    return c;
}

}  // namespace linecap
