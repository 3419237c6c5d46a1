// Which worker lcore polls which (port, queue): explicit from capture.workers, or spread
// round-robin so that every worker gets the same number of queues (±1).
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"
#include "util/result.hpp"

namespace linecap {

struct QueueRef {
    size_t port_index = 0;   // index into Config::ports
    unsigned queue = 0;
    bool operator==(const QueueRef&) const = default;
};

struct WorkerAssignment {
    unsigned lcore = 0;
    std::vector<QueueRef> queues;
};

// Workers are eal.lcore_ids[1..]; a worker without queues is an error (it would spin for
// nothing on a core the operator reserved), as is a queue without a worker.
Result<std::vector<WorkerAssignment>> assign_queues(const Config& config);

}  // namespace linecap
