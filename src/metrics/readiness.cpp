#include "metrics/readiness.hpp"

namespace linecap {

Readiness evaluate_readiness(const MetricsSnapshot& snapshot) {
    if (!snapshot.collected) return {false, "metrics not collected yet"};
    for (const PortSample& port : snapshot.ports) {
        if (!port.link.up && !port.identity.virtual_device) {
            return {false, "port " + port.name + ": link down"};
        }
    }
    if (!snapshot.all_workers_polling) {
        for (const WorkerSample& worker : snapshot.workers) {
            if (!worker.polling) return {false, "worker on lcore " + std::to_string(worker.lcore) + " is not polling"};
        }
        return {false, "workers are not polling"};
    }
    return {true, "ready"};
}

}  // namespace linecap
