// What the engine shows of its counters to the metrics side: one view per (port, queue)
// stream, port and worker, each pointing at counters the engine owns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "capture/counters.hpp"
#include "capture/worker.hpp"
#include "output/writer.hpp"

namespace linecap {
// One (port, queue) stream as the metrics side sees it.
struct StreamView {
    std::string port;
    uint16_t port_id = 0;
    uint16_t queue = 0;
    unsigned lcore = 0;
    const QueueCounters* capture = nullptr;   // rx / filtered / writer_full, by the worker
    const StreamCounters* output = nullptr;   // written / write errors, by the writer
};

struct PortView {
    std::string name;
    std::string device;
    uint16_t port_id = 0;
    unsigned rx_queues = 0;
    StampSource stamps = StampSource::tsc;  // capture.timestamps as resolved for the port
    std::vector<int> xdp_sockets;  // net_af_xdp: each queue's AF_XDP socket (dpdk/xdp_socket.hpp)
};

struct WorkerView {
    unsigned lcore = 0;
    const LcoreCounters* counters = nullptr;
    const WorkerControl* control = nullptr;
};

}  // namespace linecap
