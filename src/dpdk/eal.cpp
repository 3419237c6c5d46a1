#include "dpdk/eal.hpp"

#include <rte_eal.h>
#include <rte_errno.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

namespace linecap {

std::vector<std::string> eal_arguments(const Config& config) {
    std::vector<std::string> args = {"linecapd"};
    // "-l 0-2", or EAL's --lcores when some lcore is placed on another CPU ("2@1").
    const bool placed = config.eal.lcores.find('@') != std::string::npos;
    args.push_back(placed ? "--lcores" : "-l");
    args.push_back(config.eal.lcores);
    args.push_back("--main-lcore");
    args.push_back(std::to_string(config.eal.lcore_ids.front()));
    // --in-memory: no hugepage or runtime files on disk, so a killed daemon leaves
    // nothing behind and two instances never collide on a file prefix. --no-huge memory
    // is anonymous already (and EAL refuses the two together); --no-shconf keeps EAL's
    // shared configuration files out of /var/run/dpdk there too.
    if (config.eal.hugepages) {
        args.push_back("--in-memory");
    } else {
        args.push_back("--no-huge");
        args.push_back("--no-shconf");
    }
    // EAL still makes a runtime directory for the file prefix: our own prefix, kept empty
    // (no telemetry socket: linecapd exports its own metrics), so that it can be removed
    // at exit without touching another DPDK program's — or another linecapd's.
    args.push_back("--file-prefix");
    args.push_back("linecapd");
    args.push_back("--no-telemetry");
    if (config.eal.memory_mb > 0) {
        args.push_back("-m");
        args.push_back(std::to_string(config.eal.memory_mb));
    }
    bool any_pci = false;
    for (const auto& port : config.ports) {
        if (port.is_pci()) {
            // Allow-list: DPDK probes only the configured devices and never touches any
            // other PCI function (the management NIC in particular).
            args.push_back("-a");
            args.push_back(port.device);
            any_pci = true;
        } else {
            args.push_back("--vdev");
            args.push_back(port.device);
        }
    }
    if (!any_pci) args.push_back("--no-pci");
    // DPDK's own log goes to stderr (journald under systemd); keep it to warnings unless
    // the operator asks for more.
    args.push_back("--log-level");
    args.push_back(config.log.level == "debug" || config.log.level == "trace" ? "lib.*:info" : "lib.*:warning");
    for (const auto& extra : config.eal.args) args.push_back(extra);
    return args;
}

Result<std::unique_ptr<Eal>> Eal::init(const Config& config) {
    std::vector<std::string> args = eal_arguments(config);
    std::string joined;
    for (const auto& a : args) joined += (joined.empty() ? "" : " ") + a;
    spdlog::info("EAL arguments: {}", joined);

    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int rc = rte_eal_init(static_cast<int>(args.size()), argv.data());
    if (rc < 0) {
        return runtime_error(std::string("rte_eal_init: ") + rte_strerror(rte_errno) +
                             " (are hugepages reserved and mounted? run `linecapd --check`)");
    }
    auto eal = std::unique_ptr<Eal>(new Eal());
    eal->runtime_dir_ = rte_eal_get_runtime_dir();
    return eal;
}

Eal::~Eal() {
    rte_eal_cleanup();
    // Only if empty (rmdir); another linecapd running meanwhile keeps nothing there.
    ::rmdir(runtime_dir_.c_str());
}

}  // namespace linecap
