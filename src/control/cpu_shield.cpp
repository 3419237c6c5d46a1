#include "control/cpu_shield.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "config/values.hpp"

namespace linecap {

namespace fs = std::filesystem;

namespace {

// The slices systemd puts everything else in: services, login sessions, VMs and containers.
constexpr const char* kOtherSlices[] = {"system.slice", "user.slice", "machine.slice"};

std::string read_line(const fs::path& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// A cpulist file; an absent or empty file is the empty set. lcore_cpus() reads the same
// "0-3,8" syntax (EAL's -l is the kernel's cpulist format).
CpuSet read_cpu_list(const fs::path& path) {
    const std::vector<unsigned> cpus = lcore_cpus(read_line(path));
    return {cpus.begin(), cpus.end()};
}

CpuSet intersection(const CpuSet& a, const CpuSet& b) {
    CpuSet both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::inserter(both, both.end()));
    return both;
}

CpuSet difference(const CpuSet& a, const CpuSet& b) {
    CpuSet only_a;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(only_a, only_a.end()));
    return only_a;
}

std::string cpus_phrase(const CpuSet& cpus) {
    return (cpus.size() == 1 ? "CPU " : "CPUs ") + format_cpu_list(cpus);
}

void warn(std::vector<PreflightFinding>& f, std::string message) {
    f.push_back({PreflightFinding::Level::warning, std::move(message)});
}

// The kernel's own work (timer ticks, RCU callbacks, unbound kworkers, interrupts) can only
// be kept off a CPU from the kernel command line.
void check_kernel_cmdline(const fs::path& cpu_dir, const CpuShieldPlan& plan, std::vector<PreflightFinding>& f) {
    const CpuSet workers = plan.worker_cpus;
    const CpuSet not_isolated = difference(workers, read_cpu_list(cpu_dir / "isolated"));
    const CpuSet not_nohz = difference(workers, read_cpu_list(cpu_dir / "nohz_full"));
    if (not_isolated.empty() && not_nohz.empty()) return;
    std::string missing;
    if (!not_isolated.empty()) missing = "isolcpus= lacks worker " + cpus_phrase(not_isolated);
    if (!not_nohz.empty()) {
        missing += (missing.empty() ? "" : ", ") + std::string("nohz_full= lacks worker ") + cpus_phrase(not_nohz);
    }
    const std::string w = format_cpu_list(workers);
    warn(f, "CPU shielding: " + missing + " on the kernel command line, so the kernel's scheduler, timer ticks " +
                "and interrupts still use them; add 'isolcpus=managed_irq,domain," + w + " nohz_full=" + w +
                " rcu_nocbs=" + w + (plan.other_cpus.empty() ? "" : " irqaffinity=" + format_cpu_list(plan.other_cpus)) +
                "' (GRUB_CMDLINE_LINUX in /etc/default/grub, update-grub, reboot)");
}

// User-space work: every systemd slice but linecapd's own must exclude the worker CPUs.
void check_slices(const fs::path& cgroup_root, const CpuShieldPlan& plan, std::vector<PreflightFinding>& f) {
    std::error_code ec;
    const std::string fix = "systemctl start linecap-shield (pulled in by linecapd.service), or: systemctl "
                            "set-property system.slice user.slice machine.slice AllowedCPUs=" +
                            format_cpu_list(plan.other_cpus);
    if (!fs::exists(cgroup_root / "cgroup.controllers", ec)) {
        warn(f, "CPU shielding: no cgroup v2 hierarchy at " + cgroup_root.string() +
                    ", so nothing keeps other processes off worker " + cpus_phrase(plan.worker_cpus) +
                    " (systemd with the unified hierarchy does: systemd.unified_cgroup_hierarchy=1)");
        return;
    }
    bool any_slice = false;
    for (const char* slice : kOtherSlices) {
        const fs::path dir = cgroup_root / slice;
        if (!fs::is_directory(dir, ec)) continue;
        any_slice = true;
        // Without the cpuset controller the slice may use every CPU its parent may.
        const fs::path effective = dir / "cpuset.cpus.effective";
        const CpuSet allowed = fs::exists(effective, ec) ? read_cpu_list(effective) : plan.worker_cpus;
        const CpuSet exposed = intersection(allowed, plan.worker_cpus);
        if (exposed.empty()) continue;
        warn(f, std::string("CPU shielding: ") + slice + " may run on worker " + cpus_phrase(exposed) +
                    (fs::exists(effective, ec) ? " (" + effective.string() + ": " + format_cpu_list(allowed) + ")"
                                               : " (no cpuset controller on it)") +
                    "; " + fix);
    }
    if (!any_slice) {
        warn(f, "CPU shielding: no systemd slices under " + cgroup_root.string() +
                    " (not booted with systemd?), so nothing keeps other processes off worker " +
                    cpus_phrase(plan.worker_cpus));
    }
}

}  // namespace

CpuShieldPlan cpu_shield_plan(const Config& config, const CpuSet& online) {
    CpuShieldPlan plan;
    // The main lcore is a control thread that sleeps, free to share its CPU.
    plan.worker_cpus = worker_cpus(config.eal);
    plan.other_cpus = difference(online, plan.worker_cpus);
    return plan;
}

CpuSet online_cpus(const PreflightOptions& options) {
    return read_cpu_list(fs::path(options.sysfs) / "devices/system/cpu/online");
}

void check_cpu_shield(const Config& config, const PreflightOptions& options, std::vector<PreflightFinding>& f) {
    const CpuSet online = online_cpus(options);
    if (online.empty()) return;  // not known: check_lcores() reports a missing sysfs
    const CpuShieldPlan plan = cpu_shield_plan(config, online);
    if (plan.worker_cpus.empty()) return;
    if (plan.other_cpus.empty()) {
        warn(f, "CPU shielding: the worker lcores take every online CPU (" + format_cpu_list(plan.worker_cpus) +
                    "), none is left for the rest of the system; leave at least one CPU out of eal.lcores' "
                    "workers");
        return;
    }
    check_kernel_cmdline(fs::path(options.sysfs) / "devices/system/cpu", plan, f);
    check_slices(fs::path(options.sysfs) / "fs/cgroup", plan, f);
}

}  // namespace linecap
