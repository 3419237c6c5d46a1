// The stream a capture file belongs to: one (port, queue). Its names and manifests carry it.
#pragma once

#include <cstdint>
#include <string>

namespace linecap {

struct StreamId {
    std::string port;   // port name from the config
    uint16_t port_id;   // DPDK port id
    uint16_t queue;
};

}  // namespace linecap
