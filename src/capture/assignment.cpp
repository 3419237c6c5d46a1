#include "capture/assignment.hpp"

#include <map>

namespace linecap {

namespace {

Result<std::vector<WorkerAssignment>> explicit_assignment(const Config& config) {
    std::vector<WorkerAssignment> workers;
    std::map<std::pair<std::string, unsigned>, unsigned> seen;
    for (const WorkerMapping& mapping : config.capture.workers) {
        WorkerAssignment w{mapping.lcore, {}};
        for (const auto& ref : mapping.queues) {
            size_t port_index = 0;
            while (port_index < config.ports.size() && config.ports[port_index].name != ref.port) ++port_index;
            if (port_index == config.ports.size()) {
                return config_error("capture.workers: lcore " + std::to_string(mapping.lcore) + ": unknown port '" +
                                    ref.port + "'");
            }
            auto [it, inserted] = seen.emplace(std::make_pair(ref.port, ref.queue), mapping.lcore);
            if (!inserted) {
                return config_error("capture.workers: queue " + ref.port + ":" + std::to_string(ref.queue) +
                                    " is mapped to lcores " + std::to_string(it->second) + " and " +
                                    std::to_string(mapping.lcore));
            }
            w.queues.push_back(QueueRef{port_index, ref.queue});
        }
        workers.push_back(std::move(w));
    }
    for (size_t p = 0; p < config.ports.size(); ++p) {
        for (unsigned q = 0; q < config.ports[p].rx_queues; ++q) {
            if (!seen.count({config.ports[p].name, q})) {
                return config_error("capture.workers: queue " + config.ports[p].name + ":" + std::to_string(q) +
                                    " is not mapped to any worker");
            }
        }
    }
    return workers;
}

}  // namespace

Result<std::vector<WorkerAssignment>> assign_queues(const Config& config) {
    if (!config.capture.workers.empty()) return explicit_assignment(config);

    std::vector<WorkerAssignment> workers;
    for (size_t i = 1; i < config.eal.lcore_ids.size(); ++i) workers.push_back({config.eal.lcore_ids[i], {}});
    if (workers.empty()) return config_error("eal.lcores: need a main lcore and at least one worker lcore");

    size_t next = 0;
    for (size_t p = 0; p < config.ports.size(); ++p) {
        for (unsigned q = 0; q < config.ports[p].rx_queues; ++q) {
            workers[next].queues.push_back(QueueRef{p, q});
            next = (next + 1) % workers.size();
        }
    }
    for (const auto& w : workers) {
        if (w.queues.empty()) {
            return config_error("eal.lcores: worker lcore " + std::to_string(w.lcore) +
                                " would have no queue to poll (" + std::to_string(workers.size()) +
                                " workers for fewer queues); use fewer lcores or more rx_queues");
        }
    }
    return workers;
}

}  // namespace linecap
