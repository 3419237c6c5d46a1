// /ready: is the daemon capturing? Ready when every port is up and every worker polls.
//
// "Up" means link up as rte_eth_link_get_nowait reports it, except for virtual devices
// (net_pcap, net_af_xdp, net_null, …): several vdevs report the link down, or flip it,
// while they deliver packets perfectly well, so a vdev counts as up once the engine has
// started it. The engine only publishes its views after starting every port and only
// launches workers after that, so "vdev present and workers polling" is "vdev started".
//
// The verdict comes from the last collect() (at most one collection interval old).
#pragma once

#include <string>

#include "metrics/snapshot.hpp"

namespace linecap {

struct Readiness {
    bool ready = false;
    std::string reason;   // one line; "ready" when ready, else what is missing
};

Readiness evaluate_readiness(const MetricsSnapshot& snapshot);

}  // namespace linecap
