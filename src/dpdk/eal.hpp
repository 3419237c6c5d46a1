// Eal: owns the DPDK environment abstraction layer for the life of the process.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "util/result.hpp"

namespace linecap {

// The EAL argv the daemon derives from its configuration. Exposed for tests and for the
// startup log, so operators can see exactly how DPDK was initialised.
std::vector<std::string> eal_arguments(const Config& config);

class Eal {
public:
    static Result<std::unique_ptr<Eal>> init(const Config& config);
    ~Eal();  // rte_eal_cleanup(); every other DPDK owner must be gone by then
    Eal(const Eal&) = delete;
    Eal& operator=(const Eal&) = delete;

private:
    Eal() = default;
    std::string runtime_dir_;  // /var/run/dpdk/linecapd: empty (--in-memory/--no-shconf, --no-telemetry)
};

}  // namespace linecap
